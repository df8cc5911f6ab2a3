/**
 * A scripted OpenAI-compatible chat server for real-Pi tests. Pi's `openai-completions` provider
 * streams from `POST /v1/chat/completions`; every request body is recorded so a test can assert
 * how many model requests happened and exactly what the model saw.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { Schema } from "effect"

/** One tool call the scripted model makes. `id` defaults to a unique generated one. */
export interface ScriptedToolCall {
  readonly name: string
  readonly arguments: Readonly<Record<string, unknown>>
  /** The arguments' JSON text as sent, instead of `arguments` serialized (for JSON too deep to serialize). */
  readonly argumentsJson?: string
  readonly id?: string
}

/** Delay before the first chunk, so a turn is still in flight when something else happens. */
interface ReplyTiming {
  readonly delayMs?: number
}

export type TextReply = ReplyTiming & { readonly text: string }
export type ToolCallsReply = ReplyTiming & { readonly toolCalls: ReadonlyArray<ScriptedToolCall> }
export type Reply = TextReply | ToolCallsReply

/** A reply, or a function of the recorded request that picks one (to react to what the model saw). */
export type ScriptStep = Reply | ((request: ChatRequest) => Reply)

const ChatMessageSchema = Schema.Struct({
  role: Schema.String,
  content: Schema.optional(Schema.Unknown),
  tool_calls: Schema.optional(Schema.Unknown),
  tool_call_id: Schema.optional(Schema.String)
})
export type ChatMessage = typeof ChatMessageSchema.Type

const ChatBodySchema = Schema.Struct({
  model: Schema.optional(Schema.String),
  messages: Schema.Array(ChatMessageSchema),
  tools: Schema.optional(Schema.Array(Schema.Unknown))
})

/** One recorded `chat/completions` request. `index` is 0-based in arrival order. */
export interface ChatRequest {
  readonly index: number
  readonly messages: ReadonlyArray<ChatMessage>
  /** Names of the tools Pi declared in this request. */
  readonly toolNames: ReadonlyArray<string>
  /** The whole decoded body, for anything not covered above. */
  readonly body: unknown
}

/** What became of one request's reply. */
export type ReplyOutcome = "completed" | "clientClosed"

export interface MockOpenAI {
  /** `http://127.0.0.1:PORT/v1`, the value for models.json `baseUrl`. */
  readonly baseUrl: string
  readonly port: number
  /** Append replies to the script (FIFO). */
  enqueue(...steps: ReadonlyArray<ScriptStep>): void
  /** Replies still queued. */
  pending(): number
  requests(): ReadonlyArray<ChatRequest>
  requestCount(): number
  /** Outcome of each request's reply, by request index; `undefined` while still streaming. */
  outcomes(): ReadonlyArray<ReplyOutcome | undefined>
  /** Text of the last `user`-role message of the last request (custom messages arrive as user). */
  lastUserContent(): string | undefined
  /** Every `user`-role text in one request (default: the last request). */
  userContents(requestIndex?: number): ReadonlyArray<string>
  /** `user`-role texts (custom messages included) of a request that contain `needle`. */
  findUserContents(needle: string, requestIndex?: number): ReadonlyArray<string>
  /** Indexes of the requests whose `user`-role texts contain `needle` anywhere. */
  requestsMentioning(needle: string): ReadonlyArray<number>
  /** Resolve when at least `count` requests have arrived. */
  waitForRequests(count: number, timeoutMs?: number): Promise<void>
  /** Requests to any other path, e.g. a model list probe; Pi offline should make none. */
  strayRequests(): ReadonlyArray<string>
  close(): Promise<void>
}

export interface MockOpenAIOptions {
  readonly script?: ReadonlyArray<ScriptStep>
  /** Answered when the script is empty. Default `{ text: "ok" }`. */
  readonly defaultReply?: Reply
}

/** Text of an OpenAI message `content` (a string or an array of parts). */
export const contentText = (content: unknown): string => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content
    .map((part: unknown) =>
      typeof part === "object" && part !== null && "text" in part && typeof part.text === "string"
        ? part.text
        : ""
    )
    .join("")
}

const toolNamesOf = (tools: ReadonlyArray<unknown> | undefined): ReadonlyArray<string> =>
  (tools ?? []).flatMap((tool) => {
    if (typeof tool !== "object" || tool === null || !("function" in tool)) return []
    const fn = tool.function
    return typeof fn === "object" && fn !== null && "name" in fn && typeof fn.name === "string"
      ? [fn.name]
      : []
  })

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const parseJson = (raw: string): unknown => {
  try {
    return JSON.parse(raw)
  } catch {
    return undefined
  }
}

/** Sleep that ends early (false) when the signal fires, so a disconnected client stops the reply. */
const abortableDelay = (ms: number, signal: AbortSignal): Promise<boolean> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve(false)
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort)
      resolve(true)
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      resolve(false)
    }
    signal.addEventListener("abort", onAbort, { once: true })
  })

/** The SSE chunks of one reply, in order (without the final `[DONE]`). */
const replyChunks = (reply: Reply, requestIndex: number): ReadonlyArray<unknown> => {
  const id = `chatcmpl-mock-${requestIndex}`
  const chunk = (delta: unknown, finishReason: string | null) => ({
    id,
    object: "chat.completion.chunk",
    created: 0,
    model: "mock-model",
    choices: [{ index: 0, delta, finish_reason: finishReason }]
  })
  const usage = {
    id,
    object: "chat.completion.chunk",
    created: 0,
    model: "mock-model",
    choices: [],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
  }
  if ("text" in reply) {
    return [chunk({ role: "assistant", content: reply.text }, null), chunk({}, "stop"), usage]
  }
  const calls = reply.toolCalls.flatMap((call, i) => {
    const callId = call.id ?? `call_${requestIndex}_${i}`
    return [
      chunk(
        {
          tool_calls: [
            { index: i, id: callId, type: "function", function: { name: call.name, arguments: "" } }
          ]
        },
        null
      ),
      chunk(
        {
          tool_calls: [
            { index: i, function: { arguments: call.argumentsJson ?? JSON.stringify(call.arguments) } }
          ]
        },
        null
      )
    ]
  })
  return [chunk({ role: "assistant", content: null }, null), ...calls, chunk({}, "tool_calls"), usage]
}

/** Start the server on 127.0.0.1 with a random port. */
export const startMockOpenAI = async (options: MockOpenAIOptions = {}): Promise<MockOpenAI> => {
  const script: Array<ScriptStep> = [...(options.script ?? [])]
  const defaultReply: Reply = options.defaultReply ?? { text: "ok" }
  const recorded: Array<ChatRequest> = []
  const outcomes: Array<ReplyOutcome | undefined> = []
  const stray: Array<string> = []
  const requestWaiters = new Set<() => void>()
  const open = new Set<ServerResponse>()

  const handleChat = async (req: IncomingMessage, res: ServerResponse) => {
    const body = parseJson(await readBody(req))
    const decoded = Schema.decodeUnknownEither(ChatBodySchema)(body)
    if (decoded._tag === "Left") {
      res.writeHead(400, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { message: "mock: body is not a chat request" } }))
      return
    }
    const index = recorded.length
    const request: ChatRequest = {
      index,
      messages: decoded.right.messages,
      toolNames: toolNamesOf(decoded.right.tools),
      body
    }
    recorded.push(request)
    outcomes.push(undefined)
    for (const wake of requestWaiters) wake()

    const step = script.shift() ?? defaultReply
    const reply = typeof step === "function" ? step(request) : step
    // The client going away (Pi aborting the request) ends the reply, including its delay.
    const gone = new AbortController()
    res.on("close", () => {
      if (!res.writableFinished) gone.abort()
    })
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    res.flushHeaders()
    if (reply.delayMs !== undefined && reply.delayMs > 0) {
      const waited = await abortableDelay(reply.delayMs, gone.signal)
      if (!waited) {
        outcomes[index] = "clientClosed"
        return
      }
    }
    if (gone.signal.aborted) {
      outcomes[index] = "clientClosed"
      return
    }
    for (const chunk of replyChunks(reply, index)) res.write(`data: ${JSON.stringify(chunk)}\n\n`)
    res.end("data: [DONE]\n\n")
    outcomes[index] = "completed"
  }

  const server = createServer((req, res) => {
    open.add(res)
    res.on("close", () => open.delete(res))
    if (req.method === "POST" && req.url?.endsWith("/chat/completions")) {
      handleChat(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500)
        res.end(String(error))
      })
      return
    }
    stray.push(`${req.method ?? "?"} ${req.url ?? "?"}`)
    res.writeHead(404, { "content-type": "application/json" })
    res.end(JSON.stringify({ error: { message: "mock: not found" } }))
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("mock-openai: no TCP address")
  const port = address.port

  const requestAt = (requestIndex: number | undefined): ChatRequest | undefined =>
    recorded[requestIndex ?? recorded.length - 1]
  const userContents = (requestIndex?: number): ReadonlyArray<string> =>
    (requestAt(requestIndex)?.messages ?? [])
      .filter((m) => m.role === "user")
      .map((m) => contentText(m.content))

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    enqueue: (...steps) => {
      script.push(...steps)
    },
    pending: () => script.length,
    requests: () => [...recorded],
    requestCount: () => recorded.length,
    outcomes: () => [...outcomes],
    lastUserContent: () => userContents().at(-1),
    userContents,
    findUserContents: (needle, requestIndex) => userContents(requestIndex).filter((t) => t.includes(needle)),
    requestsMentioning: (needle) =>
      recorded.filter((r) => userContents(r.index).some((t) => t.includes(needle))).map((r) => r.index),
    waitForRequests: (count, timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        if (recorded.length >= count) return resolve()
        const timer = setTimeout(() => {
          requestWaiters.delete(check)
          reject(
            new Error(
              `mock-openai: expected ${count} request(s) within ${timeoutMs} ms, got ${recorded.length}`
            )
          )
        }, timeoutMs)
        const check = () => {
          if (recorded.length < count) return
          clearTimeout(timer)
          requestWaiters.delete(check)
          resolve()
        }
        requestWaiters.add(check)
      }),
    strayRequests: () => [...stray],
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy()
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}

/*
 * The waiting presentation as the message that answers a pending turn intent
 * (src/engine/checkpoint.ts presentWaiting and recover, src/delivery/natural-delivery.ts,
 * the fallback pass of src/delivery/fallback.ts, confirmSent in src/delivery/protocol.ts), for
 * Spin. docs/protocol.md ("The waiting presentation model") maps every step to the code.
 *
 * One run, one session, one Pi process that may crash and restart (a crash loses the process's
 * memory and its unwritten sends; the store and the branch survive). A step of the run timed
 * out and its `timed_out` route led to a wait node: the timeout's turn intent I is pending (not
 * fallback-eligible: the run has not ended) and the runner has just stored the wait and set the
 * run waiting. Its presentation goes out through natural delivery, `once`. Natural deliveries:
 *   d = 0  the runner's presentation (onWait after the wait write)
 *   d = 1  recover's resend (Engine.recover at session start; with PERIODIC also on every
 *          maintenance pass, which runs reconcileSession, hence recover, every 5 s)
 *   d = 2  the late agent prompt: the answer resumed the run and its next step prompts
 * A fallback pass (settle, session start or periodic) may run at any moment. Pi writes each send
 * after any delay and in any order, or loses one (LOSSES); a lost send carrying I has its claim
 * released (confirmSent, past the write-delay bound). The answer (the `answer` tool,
 * `/workflow answer`, or the wait's deadline) closes the wait; after it the run may end, and
 * reconciliation then makes a still pending I eligible for its fallback.
 *
 * Time is not modelled: a live claimant's claim does not expire (delivery.pml proves that the
 * lease outlasts every unwritten send); a dead owner's claim is freed by the next pass or
 * claimant of the restarted process (isDeadOwner). Each store call is one atomic step; list and
 * claimForRun of one loop pass are merged (what can change between them leads to the outcomes
 * of the next pass). Store failures (sendUnbooked) are not modelled, and with them goes the one
 * use of the presentation's `answers`: otherwise claimForRun takes the run's pending intent
 * whether `answers` is given or not (recover's resend gives none and still claims I).
 *
 * Constants (constants.pml, written by scripts/check-model.ts; defaults below):
 *   CRASHES, LOSSES  crashes of the process, sends Pi loses
 *   ONCE             natural delivery skips a `once` message whose copy the branch holds
 *   CLAIM            the presentation goes through the run's pending intent (0: sent plain,
 *                    as a message that claims nothing)
 *   FB_CHECK         the fallback pass claims only an unclaimed (or its own) intent
 *   PERIODIC         how many times recover also runs in a live process (the maintenance pass
 *                    runs it every 5 s; 0: only at a restart)
 *   EARLY_ANSWER     the answer may come before the branch shows a presentation (the user's
 *                    `/workflow answer`, or a deadline); 0: only an answer to a shown question
 *   ELIG             1: I may become eligible once the wait was answered (the run may end);
 *                    2: at any moment
 *   INTENT           0: no intent pending (the wait follows a submitted step; a presentation
 *                    sent during the model's turn waits in Pi's follow-up queue, unwritten)
 *   RESOLVE_AT_SEND  1: natural delivery stores the resolution at its send (not once the
 *                    branch shows the message)
 *   WITHHOLD         right before each send (plain or claimed) the presentation is withheld when
 *                    the wait is no longer open (`stillWanted`) or, with ONCE, when the branch
 *                    shows a copy (natural-delivery.ts `withheld`); a claim it held is released.
 *                    The check and the send are one step here; in the code a store read and the
 *                    send follow each other
 *
 * Properties (assertions): (a) the branch holds at most one answer to I: the presentation (any
 * copy, with or without I's identity), the fallback, or a late prompt carrying I; (b) at most one
 * copy of the presentation (one request ID); (c) I is resolved only with its resolving message,
 * of the stored resolution, in the branch.
 */
#include "constants.pml"
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef LOSSES
#define LOSSES 1
#endif
#ifndef ONCE
#define ONCE 1
#endif
#ifndef CLAIM
#define CLAIM 1
#endif
#ifndef FB_CHECK
#define FB_CHECK 1
#endif
#ifndef PERIODIC
#define PERIODIC 0
#endif
#ifndef EARLY_ANSWER
#define EARLY_ANSWER 0
#endif
#ifndef ELIG
#define ELIG 1
#endif
#ifndef INTENT
#define INTENT 1
#endif
#ifndef RESOLVE_AT_SEND
#define RESOLVE_AT_SEND 0
#endif
#ifndef WITHHOLD
#define WITHHOLD 1
#endif

/* Claim tokens (delivery_claim_token): the fallback pass, natural delivery d (2 + d), a dead one. */
#define FB 1
#define TOKEN(d) (2 + (d))
#define DEAD 9
/* Resolutions (and the kind of a message carrying I). */
#define K_PRES 1
#define K_FB 2
#define K_PROMPT 3
#define IS_PRES(d) ((d) < 2)
#define KIND(d) (IS_PRES(d) -> K_PRES : K_PROMPT)

/* The store: the intent row and the wait. */
byte itok;          /* delivery_claim_token: 0, FB, TOKEN(d) or DEAD */
bool ires;          /* resolved_at IS NOT NULL */
bool elig;          /* eligible_at IS NOT NULL */
bool waitOpen = 1;  /* the wait is open (run waiting, run.waitRequestId is its request) */
bool answered;      /* the answer (or the deadline) settled the wait; the run resumed */
/* The branch: messages written. */
byte presI;         /* presentations carrying I (turnIntentId, turnMessageId) */
byte presPlain;     /* presentations without it */
byte fb;            /* fallbacks of I */
byte promptI;       /* late prompts carrying I */
byte firstI;        /* the kind of the oldest message carrying I (findResolvingMessage), 0: none */
/* Pi's unwritten sends, by the same kinds (plain prompts concern no property and are not kept). */
byte ppresI;
byte ppresPlain;
byte pfb;
byte ppromptI;
/* Process memory, lost in a crash. */
byte npc[3];        /* natural delivery d: 0 none, 1 forked, 2 list/claim, 3 branch check, 4 send */
byte uncTok;        /* the token of this process's unconfirmed send of I, 0: none */
byte uncKind;       /* its resolution */
/* The environment's budget. */
byte crashes;
byte losses;
byte recovers;

#define PRESENTED ((presI + presPlain > 0) -> 1 : 0)
#define IN_FLIGHT (npc[0] >= 2 || npc[1] >= 2 || npc[2] >= 2) /* naturalInFlight of the run */
#define MAY_ELIG ((ELIG == 2 || answered) && !elig && !ires)
/* natural-delivery.ts `withheld`, for a presentation about to be sent */
#define WITHHELD(d) (WITHHOLD && IS_PRES(d) && (!waitOpen || (ONCE && presI + presPlain > 0)))

inline resolve(kind, t) { /* TurnIntentStore.resolve: only with the live claim */
  if
  :: !ires && itok == t ->
     ires = 1; itok = 0;
     printf("MSC: resolve I as %d by %d\n", kind, t);
     /* (c) resolved only with its message, of that resolution, in the branch */
     assert((kind == K_PRES && presI > 0) || (kind == K_FB && fb > 0) || (kind == K_PROMPT && promptI > 0))
  :: else -> printf("MSC: resolve I by %d refused\n", t)
  fi
}
inline release(t) { if :: !ires && itok == t -> itok = 0; printf("MSC: release I by %d\n", t) :: else fi }
/* sendPlain: the message unchanged, unless it is withheld right before the send. */
inline sendPlain(d) {
  if
  :: WITHHELD(d) -> printf("MSC: n%d withholds the presentation\n", d)
  :: !WITHHELD(d) && IS_PRES(d) -> ppresPlain++; printf("MSC: n%d sends the presentation plain\n", d)
  :: !IS_PRES(d) -> printf("MSC: n%d sends the prompt plain\n", d)
  fi;
  npc[d] = 0
}
/* sendClaimed after the renewal: the message with I's identity; unconfirmed until the branch shows it. */
inline sendClaimed(d) {
  if :: IS_PRES(d) -> ppresI++ :: else -> ppromptI++ fi;
  uncTok = TOKEN(d); uncKind = KIND(d);
  if
  :: IS_PRES(d) -> printf("MSC: n%d sends the presentation with I\n", d)
  :: else -> printf("MSC: n%d sends the prompt with I\n", d)
  fi;
#if RESOLVE_AT_SEND
  resolve(KIND(d), TOKEN(d)); uncTok = 0;
#endif
  npc[d] = 0
}

/* Natural delivery d, one atomic step per store call (natural-delivery.ts deliver, throughIntent). */
proctype Natural(byte d) {
  do
  /* deliverNatural: counted in flight, then the `once` look-up (alreadyInBranch). */
  :: atomic { npc[d] == 1 ->
       if
       :: ONCE && IS_PRES(d) && presI + presPlain > 0 -> printf("MSC: n%d already in the branch\n", d); npc[d] = 0
       :: else ->
          if
          :: !CLAIM && IS_PRES(d) -> sendPlain(d) /* variant: a presentation that claims nothing */
          :: else -> npc[d] = 2
          fi
       fi }
  /* list(pending) for the run, the unconfirmed check, claimForRun (a dead holder freed first). */
  :: atomic { npc[d] == 2 ->
       if
       :: ires -> sendPlain(d) /* none pending */
       :: !ires && uncTok != 0 -> printf("MSC: n%d: I has its message on the way\n", d); sendPlain(d)
       :: !ires && uncTok == 0 && (itok == 0 || itok == DEAD || itok == TOKEN(d)) ->
          itok = TOKEN(d); printf("MSC: n%d claims I\n", d); npc[d] = 3
       :: !ires && uncTok == 0 && itok != 0 && itok != DEAD && itok != TOKEN(d) ->
          /* held by a live claimant: retry (no step here) until the deadline passes */
          printf("MSC: n%d: claim held past the deadline\n", d); sendPlain(d)
       fi }
  /* throughIntent: the branch first (repair), else on to the send. */
  :: atomic { npc[d] == 3 ->
       if
       :: firstI != 0 ->
          resolve(firstI, TOKEN(d));
          if
          :: firstI == K_PRES && IS_PRES(d) -> printf("MSC: n%d found itself in the branch\n", d); npc[d] = 0
          :: else -> release(TOKEN(d)); sendPlain(d) /* Repaired: the next pass sends it plain */
          fi
       :: else -> npc[d] = 4
       fi }
  /* awaitIdle, settleDone, then sendClaimed: renew (ClaimLost: look again), send. */
  :: atomic { npc[d] == 4 ->
       if
       :: !ires && itok == TOKEN(d) && WITHHELD(d) ->
          release(TOKEN(d)); printf("MSC: n%d withholds the presentation\n", d); npc[d] = 0
       :: !ires && itok == TOKEN(d) && !WITHHELD(d) -> sendClaimed(d)
       :: else -> printf("MSC: n%d claim lost\n", d); npc[d] = 2
       fi }
  od
}

/* The fallback pass (fallback.ts syncPass), one atomic step; it runs only when it changes something. */
#define PASS_USEFUL \
  ((uncTok != 0 && firstI != 0) || (!ires && itok == DEAD) || \
   (elig && !ires && (itok == 0 || (!FB_CHECK && itok != FB))))
inline pass() {
  printf("MSC: fallback pass\n");
  /* confirmSent: resolve this process's send once the branch shows a message carrying I. */
  if
  :: uncTok != 0 && firstI != 0 -> resolve(uncKind, uncTok); uncTok = 0
  :: else
  fi;
  /* freeDeadOwners (session start, periodic) */
  if :: !ires && itok == DEAD -> itok = 0; printf("MSC: dead owner's claim freed\n") :: else fi;
  /* claimEligibleForSession, then repair / keep / let go / send one */
  if
  :: elig && !ires && (itok == 0 || itok == FB || !FB_CHECK) ->
     itok = FB; printf("MSC: pass claims I\n");
     if
     :: uncTok != 0 -> skip /* unconfirmedOf: sent, Pi may still write it; the claim stays */
     :: uncTok == 0 && firstI != 0 -> resolve(firstI, FB)
     :: uncTok == 0 && firstI == 0 && IN_FLIGHT -> release(FB) /* left to the natural delivery */
     :: uncTok == 0 && firstI == 0 && !IN_FLIGHT ->
        pfb++; uncTok = FB; uncKind = K_FB; printf("MSC: pass sends the fallback\n")
     fi
  :: else
  fi
}

/* Pi writes a send: the assertions. */
inline written(kind, carries) {
  if :: carries && firstI == 0 -> firstI = kind :: else fi;
  /* (b) one presentation per request ID */
  assert(presI + presPlain <= 1);
  /* (a) one answer to I */
  assert(PRESENTED + fb + promptI <= 1)
}
/* Pi loses a send carrying I: confirmSent gives it up past the bound (releases the claim). */
inline lostWithI() {
  losses++;
  if :: uncTok != 0 -> release(uncTok); uncTok = 0 :: else fi
}

proctype System() {
  do
  :: atomic { PASS_USEFUL -> pass() }
  /* recover in a live process (the maintenance pass): the open wait's presentation again */
  :: atomic { recovers < PERIODIC && waitOpen && npc[1] == 0 ->
       recovers++; printf("MSC: periodic recover\n"); npc[1] = 1 }
  /* The answer (or the deadline): the wait closes, the run resumes here and prompts its next step.
   * It never lands between a presentation's fork and its first step (a round trip takes longer). */
  :: atomic { waitOpen && (EARLY_ANSWER || presI + presPlain > 0) && npc[0] != 1 && npc[1] != 1 ->
       waitOpen = 0; answered = 1; npc[2] = 1; printf("MSC: the wait is answered\n") }
  /* The run ends; reconciliation makes the still pending I eligible. */
  :: atomic { MAY_ELIG -> elig = 1; printf("MSC: I eligible\n") }
  /* Pi writes a send (any order, any delay) or loses one. */
  :: atomic { ppresI > 0 -> ppresI--;
       if
       :: presI++; printf("MSC: Pi writes the presentation with I\n"); written(K_PRES, 1)
       :: losses < LOSSES -> printf("MSC: Pi loses the presentation with I\n"); lostWithI()
       fi }
  :: atomic { ppresPlain > 0 -> ppresPlain--;
       if
       :: presPlain++; printf("MSC: Pi writes a plain presentation\n"); written(K_PRES, 0)
       :: losses < LOSSES -> losses++; printf("MSC: Pi loses a plain presentation\n")
       fi }
  :: atomic { pfb > 0 -> pfb--;
       if
       :: fb++; printf("MSC: Pi writes the fallback\n"); written(K_FB, 1)
       :: losses < LOSSES -> printf("MSC: Pi loses the fallback\n"); lostWithI()
       fi }
  :: atomic { ppromptI > 0 -> ppromptI--;
       if
       :: promptI++; printf("MSC: Pi writes the prompt with I\n"); written(K_PROMPT, 1)
       :: losses < LOSSES -> printf("MSC: Pi loses the prompt with I\n"); lostWithI()
       fi }
  /* A crash, and the restart's session start: recover resends an open wait's presentation; a run
   * resumed after the answer is taken over and prompts again. */
  :: atomic { crashes < CRASHES ->
       crashes++; printf("MSC: crash (restarts)\n");
       npc[0] = 0; npc[1] = 0; npc[2] = 0; uncTok = 0; uncKind = 0;
       ppresI = 0; ppresPlain = 0; pfb = 0; ppromptI = 0;
       if :: !ires && itok != 0 -> itok = DEAD :: else fi;
       if :: waitOpen -> npc[1] = 1 :: else fi;
       if :: answered -> npc[2] = 1 :: else fi }
  od
}

init {
  atomic {
    npc[0] = 1; /* the runner stored the wait and forked its presentation */
    ires = !INTENT; /* INTENT 0: nothing pending (list finds none) */
    run System(); run Natural(0); run Natural(1); run Natural(2)
  }
}

/*
 * The successor-turn delivery protocol of src/delivery/, for Spin. docs/protocol.md maps every
 * step to its function and says how to read a counterexample; the clock, Pi and crashes are in
 * environment.pml.
 *
 * NC = 2 coordinators (Pi processes on one session), NI = 2 intents, both eligible for a
 * fallback. Intent 0 is a completed run's terminal turn intent: its natural message is the run's
 * presentation (natural delivery, with turnIntentId); its fallback is the deferred turn. Each
 * coordinator runs Pass (fallback sync passes, fallback-sync.ts); with NATURALS, coordinator 0
 * (and 1) also runs Natural (natural-delivery.ts); both share the coordinator's memory. Claim,
 * renew, release and resolve are single atomic steps with the exact conditions of
 * src/store/turn-intent-sql.ts. With faults (FAULTS, at most MAXF per behaviour) every store
 * call may be refused (nothing changes) or hang (it takes effect after the clock ticked), Pi may
 * lose a sent message, and a coordinator may crash at any step: its memory and its unwritten
 * sends go; its claims stay until their lease runs out (or, with DEAD_OWNERS, until a live
 * coordinator sees their owner is gone); it restarts with a session_start pass.
 *
 * Time: a tick is one model time unit (scripts/check-model.ts derives it). Time passes while a
 * turn runs, while a store call hangs, while Pi has an unwritten send that is not yet due, and
 * whenever every coordinator process waits; computing takes no time otherwise.
 *
 * Constants (constants.pml, generated from src/delivery/protocol.ts by the check script):
 *   LEASE, WDELAY                     lease and Pi's write-delay bound, in ticks
 *   PI_WDELAY                         Pi's real write delay (condition 1 removed: > LEASE)
 *   RENEW_BEFORE_SEND                 condition 2: renew right before the send
 *   RELEASE_OTHERS_BEFORE_SEND        condition 3: nothing slow in the handler after the send
 *   RESOLVE_ON_BRANCH                 resolve only what the branch shows (0: the old code)
 *   PRESENT_PLAIN                     1: a presentation that cannot go with its intent goes
 *                                     without it (the old natural delivery; a second terminal turn)
 *   NAT_OUTSIDE_HANDLER               rule 4: natural delivery sends only while no agent_settled
 *                                     handler of its process runs (0: natural delivery before
 *                                     the rule, which gated on Pi's idle flag alone)
 *   LOST_RELEASE                      a send missing past the bound is given up (0: kept forever)
 *   DEAD_OWNERS                       free the claims of a dead owner at once
 *   FAULTS, MAXF                      fault kinds (F_* bits) and how many per behaviour
 *   USER_TURNS, NATURALS              user turns, natural delivery processes
 */
#include "constants.pml"
#ifndef PI_WDELAY
#define PI_WDELAY WDELAY /* Pi's real write delay; the code assumes WDELAY (condition 1) */
#endif
#ifndef PRESENT_PLAIN
#define PRESENT_PLAIN 0
#endif
#ifndef NAT_OUTSIDE_HANDLER
#define NAT_OUTSIDE_HANDLER 1
#endif
#ifndef LOST_RELEASE
#define LOST_RELEASE 1
#endif
#ifndef FAULTS
#define FAULTS 15
#endif

#define F_CRASH 1
#define F_REFUSE 2
#define F_HANG 4
#define F_LOSE 8

#define NC 2
#define NI 2
#define NONE 255
#define DEAD 9 /* the token of a crashed incarnation: no live claimant presents it */

#define SYNC(c) (2 * (c) + 1)
#define NAT(c) (2 * (c) + 2)
#define AT(c, i) ((c) * NI + (i))

/* The store (workflow_turn_intents). */
byte tok[NI];      /* delivery_claim_token: 0, SYNC(c), NAT(c) or DEAD */
byte lease[NI];    /* ticks left until delivery_claim_expires_at; 0 = expired */
bool res[NI];      /* resolved_at IS NOT NULL */
/* The session. */
byte br[NI];       /* messages carrying the intent in the branch */
byte plain;        /* presentations of run 0 written without the intent (terminal turns too) */
bool busy;         /* a turn runs or aborts */
byte userTurns;    /* turns the user may still start */
bool settle[NC];   /* agent_settled seen; the coordinator's handler pass has not started */
bool held[NC];     /* the coordinator's agent_settled handler runs */
/* Pi's unwritten sends, per coordinator and intent. */
byte pend[NC * NI];
byte wleft[NC * NI]; /* ticks before Pi must have written or lost it */
bool hp[NC * NI];    /* sent from a handler that has not returned: Pi holds it */
/* Coordinator memory, lost in a crash. */
byte unc[NC * NI]; /* the claim token of a send not resolved yet, or 0 (delivery-env.ts `unconfirmed`) */
byte age[NC * NI]; /* ticks since that send, capped at WDELAY + 1 */
byte natFor[NC];   /* intent of a natural delivery in progress (naturalInFlight), or NONE */
bool natRetry[NC]; /* natural delivery retries a held claim: it may wait past the next tick */
byte gen[NC];      /* incarnation: a crash starts a new one */
bool tick[NC];     /* a periodic (or session start) pass is due */
/* The environment. */
bool natOwed;      /* run 0's presentation is still to be delivered */
byte faults;       /* crashes, refusals, hangs and lost messages so far */
bool work[NC * 2]; /* process 2c (Pass) or 2c+1 (Natural) is computing */
bool hg[NC * 2];   /* process 2c (Pass) or 2c+1 (Natural) waits for a hanging store call */
bool ht[NC * 2];   /* a tick happened since that call started hanging */
/* Scratch, written before it is read within one atomic step: not part of the state. */
hidden byte ok;
hidden byte k;

/*
 * A store call, inside an atomic step: answered, refused, answered after >= 1 tick (the step
 * breaks there: others run, time passes), or the caller crashes right before it (the process's
 * `unless` ends the step).
 */
#define STORE(ok, p) \
  if \
  :: ok = 1 \
  :: (FAULTS & F_CRASH) && faults < MAXF -> faults++; ok = 0; crash((p) / 2) \
  :: (FAULTS & F_REFUSE) && faults < MAXF -> faults++; ok = 0; printf("MSC: store refuses\n") \
  :: (FAULTS & F_HANG) && faults < MAXF -> faults++; hg[p] = 1; printf("MSC: store hangs\n"); ht[p]; ht[p] = 0; hg[p] = 0; ok = 1 \
  fi

#define CLAIMABLE(i, t) (!res[i] && (tok[i] == 0 || lease[i] == 0 || tok[i] == (t)))
#define LIVE(i, t) (!res[i] && tok[i] == (t) && lease[i] > 0)
#define DUE(k) (pend[k] > 0 && wleft[k] == 0 && !hp[k])
#define NOTDUE(k) (pend[k] > 0 && (wleft[k] > 0 || hp[k]))
#define QUIET (!work[0] && !work[1] && !work[2] && !work[3])
#if NAT_OUTSIDE_HANDLER
#define NAT_FREE(c) (!held[c])
#else
#define NAT_FREE(c) 1
#endif
/* A pass or natural delivery that may run starts before the next tick (computing takes no time). */
#define PASS_DUE(c) ((settle[c] || tick[c]) && !work[2 * (c)])
#define NAT_DUE(c) (NATURALS > (c) && natOwed && !busy && !work[2 * (c) + 1] && NAT_FREE(c) && !natRetry[c])
/* One terminal turn per run: run 0's presentation with or without its intent, or its fallback. */
#define ONE_TERMINAL assert(br[0] + plain <= 1)

inline claim(i, t) { tok[i] = t; lease[i] = LEASE; printf("MSC: claim i%d by %d\n", i, t) }
inline renew(i, t, ok) { /* TurnIntentStore.renew */
  if :: !res[i] && tok[i] == t -> lease[i] = LEASE; ok = 1 :: else -> ok = 0 fi;
  printf("MSC: renew i%d by %d: %d\n", i, t, ok)
}
inline release(i, t) {
  if :: !res[i] && tok[i] == t -> tok[i] = 0; lease[i] = 0; printf("MSC: release i%d by %d\n", i, t) :: else fi
}
inline resolve(i, t, ok) {
  if :: LIVE(i, t) -> res[i] = 1; tok[i] = 0; lease[i] = 0; ok = 1 :: else -> ok = 0 fi;
  printf("MSC: resolve i%d by %d: %d\n", i, t, ok);
  /* No intent is resolved without its message in the branch (br never decreases). */
  assert(!ok || br[i] > 0)
}
/* session.send: Pi takes it and writes it (or loses it) within WDELAY ticks of the handler's return. */
inline send(c, i, t) {
  pend[AT(c, i)]++; wleft[AT(c, i)] = PI_WDELAY; hp[AT(c, i)] = held[c];
  unc[AT(c, i)] = t; age[AT(c, i)] = 0;
  printf("MSC: send i%d by c%d (in handler %d, lease %d)\n", i, c, held[c], lease[i])
}
inline handlerReturns(c) { held[c] = 0; hp[AT(c, 0)] = 0; hp[AT(c, 1)] = 0 }

/* The clock, Pi and crashes. */
#include "environment.pml"

/* Past the write-delay bound on an idle session and not in the branch: lost (LOST_RELEASE 0:
 * never given up, the liveness self-test). */
#define LOST(i) (LOST_RELEASE && age[AT(c, i)] > WDELAY && !busy)
/* The intents of a loop that need no store call. */
#define SKIP_CONFIRM \
  do :: i < NI && !unc[AT(c, i)] -> i++ :: else -> break od
#define OURS(i) (((mine >> (i)) & 1) && !unc[AT(c, i)])
#define CHOOSE(i) (br[i] == 0 && chosen == NONE && natFor[c] != (i))
#define SKIP_REPAIR \
  do \
  :: i < NI && !OURS(i) -> i++ /* not ours, or sent and unconfirmed: keep */ \
  :: i < NI && OURS(i) && CHOOSE(i) -> chosen = i; i++ \
  :: else -> break \
  od
#define END_PASS handlerReturns(c); chosen = NONE; mine = 0; later = 0; i = 0; work[2 * c] = 0

/*
 * fallback-sync.ts syncPass. A pass is one atomic step: computing and store calls that answer
 * take no time. It breaks where a store call hangs (others run, time passes), and a crash may
 * come right before any of its store calls (STORE) or between passes (Crash).
 */
proctype Pass(byte c) {
  byte i, chosen, mine, later, g;
restart:
  g = gen[c];
  do
  :: skip;
     {
       atomic {
         settle[c] || tick[c] ->
         if
         :: settle[c] -> settle[c] = 0; held[c] = 1; printf("MSC: c%d pass in agent_settled\n", c)
         :: else -> tick[c] = 0; printf("MSC: c%d periodic pass\n", c)
         fi;
         work[2 * c] = 1; i = 0; chosen = NONE; mine = 0; later = 0;
         /* 1. confirmSent: resolve what the branch shows, keep (renew) what Pi may still write,
          *    release what is lost (idle, past the write-delay bound). */
         SKIP_CONFIRM;
         do
         :: i < NI ->
            STORE(ok, 2 * c);
            if
            :: !ok
            :: ok && br[i] > 0 -> resolve(i, unc[AT(c, i)], ok); unc[AT(c, i)] = 0
            :: ok && br[i] == 0 && LOST(i) -> release(i, unc[AT(c, i)]); unc[AT(c, i)] = 0
            :: ok && br[i] == 0 && !LOST(i) ->
               renew(i, unc[AT(c, i)], ok);
               if :: !ok -> unc[AT(c, i)] = 0 :: else fi
            fi;
            i++;
            SKIP_CONFIRM
         :: else -> break
         od;
         /* 2. The gates (shutdown, hold, busy, abort in flight); 3. freeDeadOwners (at start and
          *    periodic passes): release claims whose owner process is gone; 4.
          *    claimEligibleForSession, one statement for all. (Steps 3 and 4 are two store calls
          *    in the code; a claim between them by another coordinator changes nothing.) */
         if :: busy -> END_PASS; goto next :: else fi;
         STORE(ok, 2 * c);
         if
         :: ok ->
#if DEAD_OWNERS
            if /* at session start and on the periodic pass */
            :: !held[c] -> for (i : 0 .. NI - 1) { if :: !res[i] && tok[i] == DEAD -> tok[i] = 0; lease[i] = 0 :: else fi }
            :: else
            fi;
#endif
            for (i : 0 .. NI - 1) {
              if :: CLAIMABLE(i, SYNC(c)) -> claim(i, SYNC(c)); mine = mine | (1 << i) :: else fi
            }
         :: else
         fi;
         i = 0;
         if :: mine == 0 -> END_PASS; goto next :: else fi;
         /* Repair from the branch, keep the unconfirmed, choose one, let go of the others. */
         SKIP_REPAIR;
         do
         :: i < NI ->
            if
            :: br[i] > 0 -> /* branch repair */
               STORE(ok, 2 * c);
               if :: ok -> resolve(i, SYNC(c), ok) :: else fi;
               if :: !ok -> release(i, SYNC(c)) :: else fi
            :: else -> /* another intent of this pass: let go of it */
#if RELEASE_OTHERS_BEFORE_SEND
               STORE(ok, 2 * c);
               if :: ok -> release(i, SYNC(c)) :: else fi
#else
               later = later | (1 << i)
#endif
            fi;
            i++;
            SKIP_REPAIR
         :: else -> break
         od;
         /* 5. sendClaimed: renew, then gate and freshness, then send; 6. nothing slow after the
          *    send: the handler returns, Pi may write. */
         if :: chosen == NONE -> END_PASS; goto next :: else fi;
#if RENEW_BEFORE_SEND
         STORE(ok, 2 * c);
         if :: ok -> renew(chosen, SYNC(c), ok) :: else fi;
         if :: !ok -> END_PASS; goto next :: else fi;
#endif
         if
         :: !busy && (!RENEW_BEFORE_SEND || (tok[chosen] == SYNC(c) && !res[chosen] && lease[chosen] > WDELAY)) ->
            send(c, chosen, SYNC(c))
         :: else -> release(chosen, SYNC(c)); END_PASS; goto next
         fi;
#if RESOLVE_ON_BRANCH && RELEASE_OTHERS_BEFORE_SEND
         END_PASS; goto next
#else
         skip
#endif
       }
#if !RELEASE_OTHERS_BEFORE_SEND
       /* Variant: the others are released after the send, while the handler still runs. */
       i = 0;
       do
       :: atomic { i < NI && ((later >> i) & 1) -> STORE(ok, 2 * c); if :: ok -> release(i, SYNC(c)) :: else fi; i++ }
       :: atomic { i < NI && ((later >> i) & 1) == 0 -> i++ }
       :: atomic { i == NI -> break }
       od;
#endif
#if !RESOLVE_ON_BRANCH
       /* The old code: store the resolution right after the send, inside the handler. */
       atomic {
         STORE(ok, 2 * c);
         if :: ok -> resolve(chosen, SYNC(c), ok) :: else fi;
         if :: ok -> unc[AT(c, chosen)] = 0 :: else fi
       }
#endif
       atomic { END_PASS }
next:
       skip
     } unless { gen[c] != g };
     if
     :: atomic { gen[c] != g -> chosen = NONE; mine = 0; later = 0; i = 0; work[2 * c] = 0 }; goto restart
     :: else
     fi
  od
}

/*
 * natural-delivery.ts deliverNatural for run 0's presentation. Where a workflow prompt would go
 * out without its intent ("plain"), the presentation is left to the intent's fallback, which
 * carries the same terminal decision: one terminal turn per run (PRESENT_PLAIN 1 sends it).
 */
#if PRESENT_PLAIN
#define PLAIN plain++; printf("MSC: presentation written without its intent\n"); ONE_TERMINAL
#else
#define PLAIN skip
#endif
#define END_NAT natFor[c] = NONE; work[2 * c + 1] = 0
/* sendClaimed from natural delivery: renew, gate and freshness, send. */
#if RENEW_BEFORE_SEND
#define NAT_RENEW \
  STORE(ok, 2 * c + 1); \
  if :: ok -> renew(0, NAT(c), ok) :: else fi; \
  if :: !ok -> END_NAT; goto next :: else fi /* ClaimLost: look again */
#else
#define NAT_RENEW skip
#endif
#if RESOLVE_ON_BRANCH
#define NAT_AFTER END_NAT; goto next
#else
#define NAT_AFTER goto oldResolve
#endif
#define NAT_SEND \
  NAT_RENEW; \
  if \
  :: !busy && NAT_FREE(c) && (!RENEW_BEFORE_SEND || (tok[0] == NAT(c) && !res[0] && lease[0] > WDELAY)) -> \
     send(c, 0, NAT(c)); natOwed = 0 \
  :: else -> release(0, NAT(c)); END_NAT; goto next /* NotNow: look again */ \
  fi; \
  NAT_AFTER
proctype Natural(byte c) {
  byte g;
restart:
  g = gen[c];
  do
  :: skip;
     {
       if
       :: atomic { natOwed && res[0] -> natOwed = 0; PLAIN; goto next } /* answered already */
       :: atomic {
         natOwed && !res[0] && !busy -> natFor[c] = 0; work[2 * c + 1] = 1;
         if :: unc[AT(c, 0)] -> natOwed = 0; PLAIN; END_NAT; goto next :: else fi /* this coordinator's copy is on its way */
         STORE(ok, 2 * c + 1);
         natRetry[c] = 0;
#if DEAD_OWNERS
         /* The holder died on this machine: free its claim and claim again at once. */
         if :: ok && !res[0] && tok[0] == DEAD -> tok[0] = 0; lease[0] = 0 :: else fi;
#endif
         if
         :: ok && CLAIMABLE(0, NAT(c)) -> claim(0, NAT(c))
         :: ok && !CLAIMABLE(0, NAT(c)) -> /* held by another claimant: retry (every TimingPolicy.claimRetry) */
            ok = 0;
            if :: natRetry[c] = 1; END_NAT; goto next :: skip /* the deadline passed */ fi
         :: !ok
         fi;
         /* held past the deadline, or the store failed */
         if :: !ok -> natOwed = 0; PLAIN; END_NAT; goto next :: else fi;
         if :: br[0] > 0 -> natOwed = 0; goto repair :: else fi;
         /* Idle already: awaitIdle returns at once (a hang above may have let a turn start). */
         if :: busy || !NAT_FREE(c) -> work[2 * c + 1] = 0 :: else -> NAT_SEND fi
       }
       fi;
       /* awaitIdle (lease time passes while a turn runs); with NAT_OUTSIDE_HANDLER also
        * settleDone, until this process's agent_settled handler has returned. */
       atomic { !busy && NAT_FREE(c) -> work[2 * c + 1] = 1; NAT_SEND }
#if !RESOLVE_ON_BRANCH
oldResolve: /* the old code: store the resolution right after the send */
       atomic {
         STORE(ok, 2 * c + 1);
         if :: ok -> resolve(0, NAT(c), ok) :: else fi;
         if :: ok -> unc[AT(c, 0)] = 0 :: else fi;
         END_NAT; goto next
       }
#endif
repair: /* the branch shows the intent's fallback: record it (the presentation follows plain) */
       atomic { STORE(ok, 2 * c + 1); if :: ok -> resolve(0, NAT(c), ok) :: else fi; PLAIN; END_NAT }
next:
       skip
     } unless { gen[c] != g };
     if
     :: atomic { gen[c] != g -> END_NAT }; goto restart
     :: else
     fi
  od
}

init {
  atomic {
    natFor[0] = NONE; natFor[1] = NONE;
    natOwed = (NATURALS > 0);
    userTurns = USER_TURNS;
    tick[0] = 1; tick[1] = 1; /* session_start passes */
    run Pass(0); run Pass(1);
#if NATURALS > 0
    run Natural(0);
#endif
#if NATURALS > 1
    run Natural(1);
#endif
    skip
  }
}

/* Every intent is eventually resolved (under weak fairness, finitely many faults). */
ltl all_resolved { <> (res[0] && res[1]) }

/*
 * The successor-turn delivery protocol of src/delivery/, for Spin. docs/protocol.md maps every
 * step to its function and says how to read a counterexample.
 *
 * NC = 2 coordinators (Pi processes on one session), NI = 2 intents, both eligible for a
 * fallback; intent 0's run also sends a workflow prompt (natural delivery). Each coordinator
 * runs Pass (fallback sync passes, fallback-sync.ts) and, with NATURALS, Natural
 * (natural-delivery.ts); both share the coordinator's memory. Claim, renew, release and resolve
 * are single atomic steps with the exact conditions of src/store/turn-intent-sql.ts. Every
 * store call may be refused (nothing changes) or hang (it takes effect after the clock ticked).
 * A crash drops the coordinator's memory and its unwritten sends; its claims stay until their
 * lease runs out (or, with DEAD_OWNERS, until a live coordinator sees their owner is gone).
 *
 * Time: a tick is one model time unit (scripts/check-model.mjs derives it). Time passes while a
 * turn runs, while a store call hangs, while Pi has an unwritten send that is not yet due, and
 * whenever every coordinator process waits; computing takes no time otherwise.
 *
 * Constants (model/constants.pml, generated from src/delivery/protocol.ts by the check script):
 *   LEASE, WDELAY                     lease and Pi's write-delay bound, in ticks
 *   RENEW_BEFORE_SEND                 condition 2: renew right before the send
 *   RELEASE_OTHERS_BEFORE_SEND        condition 3: nothing slow in the handler after the send
 *   RESOLVE_ON_BRANCH                 resolve only what the branch shows (0: today's old code)
 *   DEAD_OWNERS                       free the claims of a dead owner at once
 *   MAXF, USER_TURNS, NATURALS        faults per behaviour, user turns, natural processes
 */
#include "constants.pml"
#ifndef PI_WDELAY
#define PI_WDELAY WDELAY /* Pi's real write delay; the code assumes WDELAY (condition 1) */
#endif

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
bool busy;         /* a turn runs or aborts */
byte userTurns;    /* turns the user may still start */
bool settle[NC];   /* agent_settled seen; the coordinator's handler pass has not started */
bool held[NC];     /* the coordinator's agent_settled handler runs */
/* Pi's unwritten sends, per coordinator and intent. */
byte pend[NC * NI];
byte wleft[NC * NI]; /* ticks before Pi must have written or lost it */
bool hp[NC * NI];    /* sent from a handler that has not returned: Pi holds it */
/* Coordinator memory, lost in a crash. */
bool unc[NC * NI]; /* sent, not resolved (delivery-env.ts `unconfirmed`) */
byte age[NC * NI]; /* ticks since that send, capped at WDELAY + 1 */
byte natFor[NC];   /* intent of a natural delivery in progress (naturalInFlight), or NONE */
byte gen[NC];      /* incarnation: a crash starts a new one */
bool tick[NC];     /* a periodic (or session start) pass is due */
/* The environment. */
bool natOwed;      /* intent 0's run still has its workflow prompt to send */
byte faults;       /* crashes, refusals, hangs and lost messages so far */
bool work[NC * 2]; /* process 2c (Pass) or 2c+1 (Natural) is computing */
byte hang;         /* store calls hanging now */
bool ht[NC * 2];   /* a tick happened since that process's call started hanging */

/* A store call, inside an atomic step: answered, refused, or answered after >= 1 tick. */
#define STORE(ok, p) \
  if \
  :: ok = 1 \
  :: faults < MAXF -> faults++; ok = 0; printf("MSC: store refuses\n") \
  :: faults < MAXF -> faults++; hang++; printf("MSC: store hangs\n"); ht[p]; ht[p] = 0; hang--; ok = 1 \
  fi

#define CLAIMABLE(i, t) (!res[i] && (tok[i] == 0 || lease[i] == 0 || tok[i] == (t)))
#define LIVE(i, t) (!res[i] && tok[i] == (t) && lease[i] > 0)
#define DUE(k) (pend[k] > 0 && wleft[k] == 0 && !hp[k])
#define NOTDUE(k) (pend[k] > 0 && (wleft[k] > 0 || hp[k]))
#define QUIET (!work[0] && !work[1] && !work[2] && !work[3])

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
  /* No intent is resolved without its message in the branch (br never decreases). */
  assert(!ok || br[i] > 0);
  printf("MSC: resolve i%d by %d: %d\n", i, t, ok)
}
/* session.send: Pi takes it and writes it (or loses it) within WDELAY ticks of the handler's return. */
inline send(c, i) {
  pend[AT(c, i)]++; wleft[AT(c, i)] = PI_WDELAY; hp[AT(c, i)] = held[c];
  unc[AT(c, i)] = 1; age[AT(c, i)] = 0;
  printf("MSC: send i%d by c%d (in handler %d, lease %d)\n", i, c, held[c], lease[i])
}
inline handlerReturns(c) { held[c] = 0; hp[AT(c, 0)] = 0; hp[AT(c, 1)] = 0 }

active proctype Clock() {
  byte k;
  do
  :: atomic {
       !DUE(0) && !DUE(1) && !DUE(2) && !DUE(3) &&
       (QUIET || hang > 0 || busy || NOTDUE(0) || NOTDUE(1) || NOTDUE(2) || NOTDUE(3)) ->
       for (k : 0 .. NI - 1) { if :: lease[k] > 0 -> lease[k]-- :: else fi }
       for (k : 0 .. NC * NI - 1) {
         if :: pend[k] > 0 && !hp[k] && wleft[k] > 0 -> wleft[k]-- :: else fi;
         if :: unc[k] && age[k] <= WDELAY -> age[k]++ :: else fi
       }
       if :: hang > 0 -> for (k : 0 .. NC * 2 - 1) { ht[k] = 1 } :: else fi
       tick[0] = 1; tick[1] = 1;
       printf("MSC: tick (leases %d %d)\n", lease[0], lease[1]);
       k = 0
     }
  od
}

/* Pi writes a send (a turn starts) or loses it (a fault); turns settle; the user starts turns. */
active proctype Pi() {
  byte k;
  do
  :: atomic {
       (pend[0] > 0 && !hp[0]) || (pend[1] > 0 && !hp[1]) || (pend[2] > 0 && !hp[2]) || (pend[3] > 0 && !hp[3]) ->
       if
       :: pend[0] > 0 && !hp[0] -> k = 0
       :: pend[1] > 0 && !hp[1] -> k = 1
       :: pend[2] > 0 && !hp[2] -> k = 2
       :: pend[3] > 0 && !hp[3] -> k = 3
       fi;
       pend[k]--;
       if
       :: br[k % NI]++; busy = 1; printf("MSC: Pi writes i%d sent by c%d\n", k % NI, k / NI);
          assert(br[k % NI] <= 1)
       :: faults < MAXF -> faults++; printf("MSC: Pi loses i%d sent by c%d\n", k % NI, k / NI)
       fi;
       if :: pend[k] == 0 -> wleft[k] = 0 :: else fi;
       k = 0
     }
  :: atomic { busy -> busy = 0; settle[0] = 1; settle[1] = 1; printf("MSC: agent_settled\n") }
  :: atomic { !busy && userTurns > 0 -> userTurns--; busy = 1; printf("MSC: user turn\n") }
  od
}

/* A crash at any moment (finitely many): memory and unwritten sends go; claims stay. */
active proctype Crash() {
  byte c, k;
  do
  :: break
  :: atomic {
       faults < MAXF -> faults++;
       if :: c = 0 :: c = 1 fi;
       printf("MSC: crash c%d\n", c);
       for (k : 0 .. NI - 1) {
         if :: tok[k] == SYNC(c) || tok[k] == NAT(c) -> tok[k] = DEAD :: else fi;
         pend[AT(c, k)] = 0; wleft[AT(c, k)] = 0; hp[AT(c, k)] = 0; unc[AT(c, k)] = 0; age[AT(c, k)] = 0
       }
       natFor[c] = NONE; settle[c] = 0; held[c] = 0;
       tick[c] = 1; /* the restarted Pi's session_start pass */
       gen[c]++;
       c = 0; k = 0
     }
  od
}

/* fallback-sync.ts syncPass */
proctype Pass(byte c) {
  byte i, chosen, mine, later, g;
  bool ok;
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
         work[2 * c] = 1; i = 0; chosen = NONE; mine = 0; later = 0
       }
       /* 1. confirmSent: resolve what the branch shows, keep (renew) what Pi may still write,
        *    release what is lost (idle, past the write-delay bound). */
       do
       :: atomic {
            i < NI ->
            if
            :: unc[AT(c, i)] ->
               STORE(ok, 2 * c);
               if
               :: !ok
               :: ok && br[i] > 0 -> resolve(i, SYNC(c), ok); unc[AT(c, i)] = 0
               :: ok && br[i] == 0 && age[AT(c, i)] > WDELAY && !busy ->
                  unc[AT(c, i)] = 0; release(i, SYNC(c))
               :: ok && br[i] == 0 && !(age[AT(c, i)] > WDELAY && !busy) ->
                  renew(i, SYNC(c), ok);
                  if :: !ok -> unc[AT(c, i)] = 0 :: else fi
               fi
            :: else
            fi;
            i++
          }
       :: atomic { i == NI -> break }
       od;
       /* 2. The gates (shutdown, hold, busy, abort in flight); 3. freeDeadOwners (at start and
        *    periodic passes): release claims whose owner process is gone; 4. claimEligibleForSession,
        *    one statement for all. (Steps 3 and 4 are two store calls in the code; a claim
        *    between them by another coordinator changes nothing.) */
       atomic {
         if :: busy -> goto done :: else fi;
         STORE(ok, 2 * c);
         if
         :: ok ->
#if DEAD_OWNERS
            for (i : 0 .. NI - 1) { if :: !res[i] && tok[i] == DEAD -> tok[i] = 0; lease[i] = 0 :: else fi }
#endif
            for (i : 0 .. NI - 1) {
              if :: CLAIMABLE(i, SYNC(c)) -> claim(i, SYNC(c)); mine = mine | (1 << i) :: else fi
            }
         :: else
         fi;
         i = 0;
         if :: mine == 0 -> goto done :: else fi
       }
       /* Repair from the branch, keep the unconfirmed, choose one, let go of the others. */
       do
       :: atomic {
            i < NI ->
            if
            :: ((mine >> i) & 1) == 0 || unc[AT(c, i)] /* not ours, or sent and unconfirmed: keep */
            :: ((mine >> i) & 1) && !unc[AT(c, i)] && br[i] > 0 -> /* branch repair */
               STORE(ok, 2 * c);
               if :: ok -> resolve(i, SYNC(c), ok) :: else fi;
               if :: !ok -> release(i, SYNC(c)) :: else fi
            :: ((mine >> i) & 1) && !unc[AT(c, i)] && br[i] == 0 && chosen == NONE && natFor[c] != i ->
               chosen = i
            :: ((mine >> i) & 1) && !unc[AT(c, i)] && br[i] == 0 && !(chosen == NONE && natFor[c] != i) ->
#if RELEASE_OTHERS_BEFORE_SEND
               STORE(ok, 2 * c);
               if :: ok -> release(i, SYNC(c)) :: else fi
#else
               later = later | (1 << i)
#endif
            fi;
            i++
          }
       :: atomic { i == NI -> break }
       od;
       atomic { if :: chosen == NONE -> goto done :: else fi }
#if RENEW_BEFORE_SEND
       /* 5. sendClaimed: renew, then gate and freshness, then send. */
       atomic {
         STORE(ok, 2 * c);
         if :: ok -> renew(chosen, SYNC(c), ok) :: else fi;
         if :: !ok -> goto done :: else fi
       }
#endif
       atomic {
         if
         :: !busy && (!RENEW_BEFORE_SEND || (tok[chosen] == SYNC(c) && !res[chosen] && lease[chosen] > WDELAY)) ->
            send(c, chosen);
#if RESOLVE_ON_BRANCH && RELEASE_OTHERS_BEFORE_SEND
            /* 6. Nothing slow after the send: the handler returns, Pi may write. */
            handlerReturns(c)
#endif
         :: else -> release(chosen, SYNC(c)); goto done
         fi
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
       /* Today's old code: store the resolution right after the send, inside the handler. */
       atomic {
         STORE(ok, 2 * c);
         if :: ok -> resolve(chosen, SYNC(c), ok) :: else fi;
         if :: ok -> unc[AT(c, chosen)] = 0 :: else fi
       }
#endif
done:
       atomic { handlerReturns(c); chosen = NONE; mine = 0; later = 0; i = 0; ok = 0; work[2 * c] = 0 }
     } unless { gen[c] != g };
     if
     :: atomic { gen[c] != g -> chosen = NONE; mine = 0; later = 0; i = 0; ok = 0; work[2 * c] = 0 }; goto restart
     :: else
     fi
  od
}

/* natural-delivery.ts deliverNatural for intent 0's workflow prompt. */
proctype Natural(byte c) {
  byte g;
  bool ok;
restart:
  g = gen[c];
  do
  :: skip;
     {
       atomic { natOwed && !res[0] && !busy -> natFor[c] = 0; work[2 * c + 1] = 1 }
       atomic { if :: unc[AT(c, 0)] -> goto plain :: else fi } /* this coordinator's copy is on its way */
       atomic {
         STORE(ok, 2 * c + 1);
         if :: ok && CLAIMABLE(0, NAT(c)) -> claim(0, NAT(c)) :: else -> ok = 0 fi;
         if :: !ok -> goto plain :: else fi /* held past the bound, or the store failed */
       }
       atomic {
         if
         :: br[0] > 0 -> STORE(ok, 2 * c + 1); if :: ok -> resolve(0, NAT(c), ok) :: else fi; goto plain
         :: else -> work[2 * c + 1] = 0
         fi
       }
       atomic { !busy -> work[2 * c + 1] = 1 } /* awaitIdle: lease time passes while a turn runs */
#if RENEW_BEFORE_SEND
       atomic {
         STORE(ok, 2 * c + 1);
         if :: ok -> renew(0, NAT(c), ok) :: else fi;
         if :: !ok -> goto plain :: else fi
       }
#endif
       atomic {
         if
         :: !busy && (!RENEW_BEFORE_SEND || (tok[0] == NAT(c) && !res[0] && lease[0] > WDELAY)) ->
            send(c, 0); natOwed = 0
         :: else -> release(0, NAT(c)); goto plain
         fi
       }
#if !RESOLVE_ON_BRANCH
       atomic {
         STORE(ok, 2 * c + 1);
         if :: ok -> resolve(0, NAT(c), ok) :: else fi;
         if :: ok -> unc[AT(c, 0)] = 0 :: else fi
       }
#endif
       goto out;
plain: /* sent without the intent: not a message for it */
       natOwed = 0;
out:
       atomic { natFor[c] = NONE; ok = 0; work[2 * c + 1] = 0 }
     } unless { gen[c] != g };
     if
     :: atomic { gen[c] != g -> natFor[c] = NONE; ok = 0; work[2 * c + 1] = 0 }; goto restart
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

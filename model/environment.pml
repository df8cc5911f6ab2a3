/*
 * The environment of the delivery model (model/delivery.pml, which includes this file after its
 * state and macros): the clock, Pi (writing or losing sends, settling turns, user turns) and
 * crashes of a coordinator.
 */

active proctype Clock() {
  do
  :: atomic {
       !DUE(0) && !DUE(1) && !DUE(2) && !DUE(3) && !PASS_DUE(0) && !PASS_DUE(1) &&
       !NAT_DUE(0) && !NAT_DUE(1) &&
       (QUIET || hg[0] || hg[1] || hg[2] || hg[3] || busy || NOTDUE(0) || NOTDUE(1) || NOTDUE(2) || NOTDUE(3)) ->
       for (k : 0 .. NI - 1) { if :: lease[k] > 0 -> lease[k]-- :: else fi }
       for (k : 0 .. NC * NI - 1) {
         if :: pend[k] > 0 && !hp[k] && wleft[k] > 0 -> wleft[k]-- :: else fi;
         /* The age of a send matters only while its intent is not in the branch. */
         if :: unc[k] && br[k % NI] == 0 && age[k] <= WDELAY -> age[k]++ :: else fi
       }
       for (k : 0 .. NC * 2 - 1) { if :: hg[k] -> ht[k] = 1 :: else fi }
       tick[0] = 1; tick[1] = 1; natRetry[0] = 0; natRetry[1] = 0;
       printf("MSC: tick (leases %d %d)\n", lease[0], lease[1]);
       k = 0
     }
  od
}

/* Pi writes a send (a turn starts) or loses it (a fault); turns settle; the user starts turns. */
active proctype Pi() {
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
          age[k % NI] = 0; age[NI + k % NI] = 0;
          assert(br[k % NI] <= 1); ONE_TERMINAL
       :: (FAULTS & F_LOSE) && faults < MAXF -> faults++; printf("MSC: Pi loses i%d sent by c%d\n", k % NI, k / NI)
       fi;
       if :: pend[k] == 0 -> wleft[k] = 0 :: else fi;
       k = 0
     }
  :: atomic { busy -> busy = 0; settle[0] = 1; settle[1] = 1; printf("MSC: agent_settled\n") }
  :: atomic { !busy && userTurns > 0 -> userTurns--; busy = 1; printf("MSC: user turn\n") }
  od
}

/* Coordinator x crashes: its memory and unwritten sends go; its claims stay (owner dead). */
inline crash(x) {
  printf("MSC: crash c%d\n", x);
  for (k : 0 .. NI - 1) {
    if :: tok[k] == SYNC(x) || tok[k] == NAT(x) -> tok[k] = DEAD :: else fi;
    pend[AT(x, k)] = 0; wleft[AT(x, k)] = 0; hp[AT(x, k)] = 0; unc[AT(x, k)] = 0; age[AT(x, k)] = 0
  }
  natFor[x] = NONE; natRetry[x] = 0; settle[x] = 0; held[x] = 0;
  hg[2 * x] = 0; hg[2 * x + 1] = 0; ht[2 * x] = 0; ht[2 * x + 1] = 0; /* its calls die with it */
  tick[x] = 1; /* the restarted Pi's session_start pass */
  gen[x]++
}

/* A crash between steps, at any moment (finitely many); STORE adds one right before any call. */
active proctype Crash() {
  do
  :: break
  :: atomic { (FAULTS & F_CRASH) && faults < MAXF -> faults++; if :: crash(0) :: crash(1) fi }
  od
}

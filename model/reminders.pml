/*
 * Step reminders (src/app/step-reminders.ts, src/domain/step-reminder.ts, the settle order of
 * afterSettle in src/app/session-hooks.ts), for Spin. docs/protocol.md ("The step reminder
 * model") maps every step to the code.
 *
 * One agent step attempt awaits its submit, in one Pi session with NP (<= 2) Pi processes: two
 * processes on the session, or one that crashes and restarts (a crash loses the process's
 * memory and its unwritten sends; the store and the branch survive). The environment: a turn
 * settles (at most SETTLES times); an interruption may make a turn intent of the run pending at
 * any moment (its successor is a fallback that a sync pass sends and, once the branch shows it,
 * resolves); Pi writes a sent message to the branch after any delay and in any order (its
 * queue is FIFO: the model allows more), or loses it (at most LOSSES); the model may submit
 * (the step closes) at any moment of a turn. As in delivery.pml, every live process sees each
 * agent_settled, and both share one branch.
 *
 * Each process's agent_settled handler runs the code's steps in order, each one atomic step:
 *   1. the fallback sync pass (Coordinator.onSettled): resolve the fallback the branch shows,
 *      else send it if the intent is pending and unclaimed; `answered` if it sent
 *   2. afterSettle: no reminder when the pass answered the settle; Engine.openStep
 *   3. session.branch: the reminder ordinals the branch shows
 *   4. TurnIntentStore.list(pending): is a turn intent of the run pending?
 *   5. StepReminderStore.forAttempt (the ordinals taken; stoppedBy and AbortBookkeeping are not
 *      modelled) and decideReminder (pure): reminder 1, 2, the notice (ordinal 3) or nothing
 *   6. StepReminderStore.take: INSERT ... ON CONFLICT DO NOTHING, the first taker wins
 *   7. session.send; then the handler returns (Pi holds every send made while it runs)
 * A periodic (or session start) sync pass of either process may run between any two steps.
 *
 * Constants (constants.pml, written by scripts/check-model.ts; defaults below):
 *   MAXR              reminders per attempt (MAX_REMINDERS in src/domain/step-reminder.ts)
 *   NP, SETTLES       processes, settles of model turns
 *   INTENTS, CRASHES, LOSSES   interruptions, crashes, messages Pi loses
 *   TAKE              take the ordinal in the store (0: BRANCH_ONLY, the branch scan alone)
 *   SEND_BEFORE_TAKE  send first, take after (1: the wrong order)
 *   PENDING_CHECK     decide nothing while an intent is pending (successorPending)
 *   SYNC_SKIP         no reminder when the settle's sync pass delivered a fallback
 *   ASSERT_C          assert (c) (0 in the self-test that must show (b))
 *   STRICT_PENDING    assert (d): no reminder is sent while any intent is pending (a limit)
 *
 * Properties: (a) the branch never holds more than MAXR reminders of the attempt, nor two
 * messages of one ordinal (reminder or notice); (b) one settle handler never sends both the
 * fallback (its sync pass) and a reminder; (c) no reminder is sent while an intent that the
 * handler saw pending (step 4) is unresolved; with STRICT_PENDING, (d) no reminder is sent while
 * any intent of the run is pending (the code does not keep it: see docs/protocol.md).
 */
#include "constants.pml"
#ifndef MAXR
#define MAXR 2
#endif
#ifndef NP
#define NP 2
#endif
#ifndef SETTLES
#define SETTLES 3
#endif
#ifndef INTENTS
#define INTENTS 1
#endif
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef LOSSES
#define LOSSES 1
#endif
#ifndef TAKE
#define TAKE 1
#endif
#ifndef SEND_BEFORE_TAKE
#define SEND_BEFORE_TAKE 0
#endif
#ifndef PENDING_CHECK
#define PENDING_CHECK 1
#endif
#ifndef SYNC_SKIP
#define SYNC_SKIP 1
#endif
#ifndef ASSERT_C
#define ASSERT_C 1 /* 0: property (c) off, so a variant must show (b) */
#endif
#ifndef STRICT_PENDING
#define STRICT_PENDING 0 /* 1: also (d), no reminder while any intent of the run is pending */
#endif

#define NOTICE (MAXR + 1) /* the user's notice takes the ordinal after the last reminder */
#define BIT(o) (1 << (o))
#define HAS(mask, o) ((((mask) >> (o)) & 1) == 1)

/* The store: workflow_step_reminders (the attempt's rows) and the run's turn intent. */
byte taken;          /* bit o: ordinal o is taken */
byte intent;         /* 0: none; 1: pending (resolved_at IS NULL); 2: resolved */
byte fclaim;         /* c + 1: process c sent the fallback and holds its claim; 0: unclaimed */
/* The session. */
byte reminded[NOTICE + 1]; /* reminder messages (notices) of ordinal o in the branch */
byte reminderTotal;  /* reminder messages in the branch (ordinals 1 .. MAXR) */
bool fallbackInBranch;
bool open = 1;       /* the step awaits its submit */
bool busy = 1;       /* a turn runs: the step's first turn */
/* Pi's unwritten sends, per process; held while that process's settle handler runs. */
byte rpend[NP];      /* bit o: reminder (notice) o sent, not yet written */
byte rheld[NP];
bool fpend[NP];      /* the fallback, sent, not yet written */
bool fheld[NP];
/* Process memory, lost in a crash. */
bool settle[NP];     /* agent_settled seen; the handler has not started */
byte pc[NP];         /* the handler's next step; 0: not running */
bool held[NP];       /* the handler runs */
bool answeredBySuccessor[NP]; /* this handler's sync pass delivered the fallback */
byte seenInBranch[NP];        /* ordinals the branch showed (step 3) */
bool sawPendingIntent[NP];    /* step 4 found the intent pending */
byte ord[NP];        /* the decided ordinal */
/* The environment's budget. */
byte settles = SETTLES;
byte intents = INTENTS;
byte crashes;
byte losses;
/* Scratch, written before it is read within one atomic step. */
hidden byte k;
hidden byte last;

/* Step 6 and the assertions of step 7 are used in two orders (SEND_BEFORE_TAKE). */
inline takeOrdinal(c) {
#if TAKE
  if
  :: HAS(taken, ord[c]) -> printf("MSC: c%d take %d: lost (taken)\n", c, ord[c]); pc[c] = 9 /* return */
  :: else -> taken = taken | BIT(ord[c]); printf("MSC: c%d take %d: won\n", c, ord[c])
  fi
#else
  skip
#endif
}
inline sendOrdinal(c) {
  rpend[c] = rpend[c] | BIT(ord[c]); rheld[c] = rheld[c] | BIT(ord[c]);
  if
  :: ord[c] == NOTICE -> printf("MSC: c%d sends the notice (%d)\n", c, ord[c])
  :: else -> printf("MSC: c%d sends reminder %d\n", c, ord[c])
  fi;
  if
  :: ord[c] <= MAXR ->
     /* (b) a reminder and a successor never both answer one settle */
     assert(!answeredBySuccessor[c]);
#if ASSERT_C
     /* (c) no reminder while an intent this handler saw pending is unresolved */
     assert(!(sawPendingIntent[c] && intent == 1));
#endif
#if STRICT_PENDING
     /* (d) no reminder while any intent of the run is pending */
     assert(intent != 1);
#endif
     skip
  :: else
  fi
}

/* A sync pass of process c (in its settle handler or periodic): confirm, or send the fallback. */
inline syncPass(c, inHandler) {
  if
  :: intent == 1 && fallbackInBranch -> intent = 2; fclaim = 0; printf("MSC: c%d resolves the intent\n", c)
  :: intent == 1 && !fallbackInBranch && fclaim == 0 && !busy ->
     fclaim = c + 1; fpend[c] = 1; fheld[c] = held[c];
     printf("MSC: c%d sends the fallback (in handler %d)\n", c, held[c]);
     if :: inHandler -> answeredBySuccessor[c] = 1 :: else fi /* SyncReport.delivered */
  :: else
  fi
}

inline handlerReturns(c) {
  held[c] = 0; rheld[c] = 0; fheld[c] = 0; pc[c] = 0;
  answeredBySuccessor[c] = 0; seenInBranch[c] = 0; sawPendingIntent[c] = 0; ord[c] = 0
}

proctype Process(byte c) {
  do
  /* 1. agent_settled: the fallback sync pass first. */
  :: atomic { pc[c] == 0 && settle[c] ->
       settle[c] = 0; held[c] = 1; printf("MSC: c%d agent_settled handler\n", c);
       syncPass(c, 1); pc[c] = 2 }
  /* A periodic or session start pass, between any two steps (only when it changes something). */
  :: atomic { intent == 1 && (fallbackInBranch || (fclaim == 0 && !busy)) ->
       printf("MSC: c%d periodic pass\n", c); syncPass(c, 0) }
  /* 2. Nothing when the pass delivered a fallback; openStep. */
  :: atomic { pc[c] == 2 ->
       if
       :: SYNC_SKIP && answeredBySuccessor[c] -> printf("MSC: c%d answered by the fallback\n", c); handlerReturns(c)
       :: else ->
          if
          :: !open -> printf("MSC: c%d no open step\n", c); handlerReturns(c)
          :: else -> pc[c] = 3
          fi
       fi }
  /* 3. The reminders the branch shows. */
  :: atomic { pc[c] == 3 ->
       for (k : 1 .. NOTICE) { if :: reminded[k] > 0 -> seenInBranch[c] = seenInBranch[c] | BIT(k) :: else fi }
       pc[c] = 4 }
  /* 4. A pending turn intent of the run. */
  :: atomic { pc[c] == 4 ->
       sawPendingIntent[c] = (intent == 1); printf("MSC: c%d reads pending: %d\n", c, sawPendingIntent[c]); pc[c] = 5 }
  /* 5. The ordinals taken in the store, and decideReminder. */
  :: atomic { pc[c] == 5 ->
       last = 0;
       for (k : 1 .. NOTICE) {
         if :: (TAKE && HAS(taken, k)) || HAS(seenInBranch[c], k) -> last = k :: else fi
       }
       if
       :: PENDING_CHECK && sawPendingIntent[c] -> printf("MSC: c%d successor pending\n", c); handlerReturns(c)
       :: else ->
          if
          :: last < MAXR -> ord[c] = last + 1; pc[c] = 6
          :: last == MAXR -> ord[c] = NOTICE; pc[c] = 6
          :: else -> printf("MSC: c%d quiet\n", c); handlerReturns(c)
          fi
       fi;
       last = 0 }
#if !SEND_BEFORE_TAKE
  /* 6. Take, 7. send, then the handler returns. */
  :: atomic { pc[c] == 6 -> takeOrdinal(c); if :: pc[c] == 6 -> pc[c] = 7 :: else -> handlerReturns(c) fi }
  :: atomic { pc[c] == 7 -> sendOrdinal(c); pc[c] = 9 }
#else
  /* The wrong order: send, then take. */
  :: atomic { pc[c] == 6 -> sendOrdinal(c); pc[c] = 7 }
  :: atomic { pc[c] == 7 -> takeOrdinal(c); pc[c] = 9 }
#endif
  :: atomic { pc[c] == 9 -> handlerReturns(c) }
  od
}

/* Pi: turns settle, sent messages are written (a turn starts) or lost, the model submits. */
active proctype Pi() {
  byte c, o;
  do
  :: atomic {
       (fpend[0] && !fheld[0]) || (NP > 1 && fpend[NP - 1] && !fheld[NP - 1]) ->
       if :: fpend[0] && !fheld[0] -> c = 0 :: NP > 1 && fpend[NP - 1] && !fheld[NP - 1] -> c = NP - 1 fi;
       fpend[c] = 0;
       if
       :: fallbackInBranch = 1; busy = 1; printf("MSC: Pi writes the fallback sent by c%d\n", c)
       :: losses < LOSSES -> losses++; fclaim = 0; printf("MSC: Pi loses the fallback (released past the bound)\n")
       fi;
       c = 0 }
  :: atomic {
       (rpend[0] & ~rheld[0]) != 0 || (NP > 1 && (rpend[NP - 1] & ~rheld[NP - 1]) != 0) ->
       if :: (rpend[0] & ~rheld[0]) != 0 -> c = 0 :: NP > 1 && (rpend[NP - 1] & ~rheld[NP - 1]) != 0 -> c = NP - 1 fi;
       o = 1;
       do
       :: HAS(rpend[c] & ~rheld[c], o) -> break
       :: o < NOTICE -> o++
       od;
       rpend[c] = rpend[c] & ~BIT(o);
       if
       :: losses < LOSSES -> losses++; printf("MSC: Pi loses %d sent by c%d\n", o, c)
       :: reminded[o]++; printf("MSC: Pi writes %d sent by c%d\n", o, c);
          if :: o <= MAXR -> busy = 1; reminderTotal++ :: else fi; /* the notice starts no turn */
          /* (a) at most MAXR reminders per attempt, never one ordinal twice */
          assert(reminderTotal <= MAXR && reminded[o] <= 1)
       fi;
       c = 0; o = 0 }
  :: atomic { busy && settles > 0 ->
       busy = 0; settles--; for (k : 0 .. NP - 1) { settle[k] = 1 }; printf("MSC: turn settles\n") }
  :: atomic { open && busy -> open = 0; printf("MSC: the model submits (in a turn)\n") }
  :: atomic { intent == 0 && intents > 0 -> intents--; intent = 1; printf("MSC: interruption: intent pending\n") }
  od
}

/* A crash of process c, between any two steps: it restarts with empty memory. */
active proctype Crash() {
  byte c;
  do
  :: break
  :: atomic { crashes < CRASHES ->
       crashes++;
       if :: c = 0 :: NP > 1 -> c = NP - 1 fi;
       printf("MSC: crash c%d (restarts)\n", c);
       handlerReturns(c);
       settle[c] = 0; rpend[c] = 0; fpend[c] = 0;
       if :: fclaim == c + 1 -> fclaim = 0 :: else fi; /* a dead owner's claim is freed */
       c = 0 }
  od
}

init {
  atomic {
    for (k : 0 .. NP - 1) { run Process(k) }
    k = 0
  }
}

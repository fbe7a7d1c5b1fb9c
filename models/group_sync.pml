/*
 * ccf — concurrent cuckoo filters.
 * group_sync.pml: Spin model of the key-value store's group commit wake-up
 * (durability::group: store::write_records and store::background_syncer,
 * include/ccf/kv/detail/store_impl.hpp).
 *
 * What is modelled
 *   Writers add their records to unsynced_writes (an atomic fetch_add); the one whose add
 *   reaches group_writes (N) takes and releases the syncer's mutex, then notifies the syncer's
 *   condition variable. The syncer holds the mutex, tests "unsynced_writes >= N" and, if not,
 *   waits on the condition variable, which releases the mutex in the same step; woken, it takes
 *   the mutex again and tests again; once the test holds it sets unsynced_writes to 0 and syncs.
 *   The syncer's timeout (group_interval) is left out: a lost notify would leave it waiting for
 *   the interval, here forever, which is what the model looks for.
 *
 * Processes
 *   writer    WRITES writes of one record each.
 *   syncer    the background syncer, forever.
 *   monitor   fails if every writer is done while the syncer waits with N or more writes
 *             unsynced: a notify was lost.
 *
 * Switches (spin -D...)
 *   WRITERS=n, WRITES=n, N=n   sizes (defaults 2, 2, 2).
 *   NO_MUTEX   the writer notifies without taking the mutex: a notify between the syncer's test
 *              and its wait is lost.
 *
 * Expected results (scripts/check_models.sh checks all of them)
 *   default    0 errors.
 *   NO_MUTEX   assertion violated.
 */

#ifndef WRITERS
#define WRITERS 2
#endif
#ifndef WRITES
#define WRITES 2
#endif
#ifndef N
#define N 2
#endif

byte unsynced = 0;
bool locked = false;  /* the syncer's mutex */
bool waiting = false; /* the syncer waits on the condition variable */
byte done = 0;        /* writers that finished */

inline lock() {
  atomic { !locked -> locked = true }
}

proctype writer() {
  byte i = 0, before;
  do
  :: i < WRITES ->
    atomic { before = unsynced; unsynced++ }
    if
    :: before + 1 >= N ->
#ifndef NO_MUTEX
      lock();
      locked = false;
#endif
      if /* notify_one */
      :: waiting -> waiting = false
      :: else -> skip
      fi
    :: else -> skip
    fi;
    i++
  :: else -> break
  od;
  done++
}

proctype syncer() {
  lock();
  do
  :: unsynced >= N -> unsynced = 0; locked = false; /* sync */ lock()
  :: unsynced < N ->
    atomic { waiting = true; locked = false }; /* wait: releases the mutex */
end_wait:
    !waiting;
    lock()
  od
}

proctype monitor() {
end_watch:
  (done == WRITERS && waiting && unsynced >= N) -> assert(false)
}

init {
  byte i = 0;
  atomic {
    run syncer();
    run monitor();
    do
    :: i < WRITERS -> run writer(); i++
    :: else -> break
    od
  }
}

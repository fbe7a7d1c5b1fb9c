/*
 * ccf — concurrent cuckoo filters.
 * lockfree_filter.pml: Spin model of the lock-free cuckoo filter's lookup protocol.
 *
 * What is modelled
 *   Two buckets (the two candidate buckets of one key), each one word of 2 slots + a relocation
 *   counter of CBITS bits (wrapping). A word is a byte: slot0 | slot1 << 2 | counter << 4.
 *   Tags are abstract: T (the key looked up), U and V (unrelated keys), 0 = empty slot.
 *   Every read of a bucket word and every CAS is one atomic step, as on the machine.
 *
 * Processes
 *   relocate_T   moves T between the two buckets: reads both words, then one atomic 2-word
 *                compare-and-swap (what ccf's K-CAS provides) that moves T to an empty slot of
 *                the other bucket and increments both counters; as the last hop of an insert of
 *                U, the same compare-and-swap also puts U into the slot T leaves.
 *   foreign_hop  relocations of V between one of our buckets and a third bucket outside the
 *                model: a single-bucket update (the other word of that K-CAS is not observed by
 *                the lookup) that also increments the bucket's counter.
 *   churn        inserts and erases U with single-word CAS (no counter change), forever.
 *   lookup       the two-phase lookup of T: read bucket 0, read bucket 1; T found -> true;
 *                otherwise read both again and retry if either counter changed, else answer
 *                false. T is in the filter before the lookup starts and is never erased (only
 *                relocated), so "false" is a false negative: assert(false) there.
 *
 * Relocations (of T and V together) are limited to MAX_HOPS counter increments in total, which
 * keeps the state space finite and lets the model show the counter wrap-around precisely.
 *
 * Switches (spin -D...)
 *   CBITS=n             counter width (default 2).
 *   MAX_HOPS=n          relocation budget (default 2^CBITS - 1: no counter can wrap).
 *   NO_COUNTER_CHECK    the broken lookup: answers false after one miss, no second read.
 *   NO_FOREIGN          no foreign_hop process: every increment is a move of T.
 *
 * Expected results (scripts/check_models.sh checks all of them)
 *   default                       0 errors (no false negative).
 *   NO_COUNTER_CHECK              assertion violated: a relocation between the two reads hides T.
 *   MAX_HOPS = 2^CBITS            assertion violated: one bucket's counter wraps to the same
 *                                 value between the lookup's two reads of it (1 move of T into
 *                                 bucket 0 + 2^CBITS - 1 foreign hops on bucket 0).
 *   NO_FOREIGN, MAX_HOPS=2^CBITS  0 errors; with 2^CBITS + 1 moves of T: violated (T's moves
 *                                 alternate buckets, so fooling both counters takes one more).
 */

#ifndef CBITS
#define CBITS 2
#endif
#define CMOD (1 << CBITS)
#ifndef MAX_HOPS
#define MAX_HOPS (CMOD - 1)
#endif

#define EMPTY 0
#define T 1
#define U 2
#define V 3

#define S0(w) ((w) & 3)
#define S1(w) (((w) >> 2) & 3)
#define CNT(w) ((w) >> 4)
#define WORD(a, b, c) ((a) | ((b) << 2) | ((c) << 4))
#define HAS(w, t) (S0(w) == (t) || S1(w) == (t))
#define BUMP(w) WORD(S0(w), S1(w), (CNT(w) + 1) % CMOD)
/* first empty slot gets t (callers check HAS(w, EMPTY)) */
#define PUT(w, t) (S0(w) == EMPTY -> WORD(t, S1(w), CNT(w)) : WORD(S0(w), t, CNT(w)))
/* the first slot holding t is emptied (callers check HAS(w, t)) */
#define REMOVE(w, t) (S0(w) == (t) -> WORD(EMPTY, S1(w), CNT(w)) : WORD(S0(w), EMPTY, CNT(w)))

byte bucket[2];
byte hops = 0; /* counter increments so far (each relocation step counts once) */

/*
 * A relocation reads the bucket words, then commits with a K-CAS that compares them again. A
 * failed K-CAS changes nothing and a successful one acts on exactly the values it compared, so
 * each relocation is modelled as the single atomic step of its successful K-CAS (the earlier
 * reads have no visible effect). churn keeps its read and its CAS apart, as a reminder that the
 * two are separate steps; it makes no difference to the lookup either.
 */
proctype relocate_T() {
  do
  :: atomic {
      hops < MAX_HOPS ->
      if
      :: HAS(bucket[0], T) && HAS(bucket[1], EMPTY) ->
        bucket[0] = BUMP(REMOVE(bucket[0], T));
        bucket[1] = BUMP(PUT(bucket[1], T));
        hops++
      :: HAS(bucket[1], T) && HAS(bucket[0], EMPTY) ->
        bucket[0] = BUMP(PUT(bucket[0], T));
        bucket[1] = BUMP(REMOVE(bucket[1], T));
        hops++
      :: HAS(bucket[0], T) && HAS(bucket[1], EMPTY) -> /* and U takes T's slot */
        bucket[0] = BUMP(PUT(REMOVE(bucket[0], T), U));
        bucket[1] = BUMP(PUT(bucket[1], T));
        hops++
      :: HAS(bucket[1], T) && HAS(bucket[0], EMPTY) -> /* and U takes T's slot */
        bucket[0] = BUMP(PUT(bucket[0], T));
        bucket[1] = BUMP(PUT(REMOVE(bucket[1], T), U));
        hops++
      :: else -> skip /* no room: try again later */
      fi
    }
  :: hops >= MAX_HOPS -> break
  od
}

proctype foreign_hop() {
  do
  :: atomic {
      hops < MAX_HOPS ->
      if
      :: HAS(bucket[0], V) -> bucket[0] = BUMP(REMOVE(bucket[0], V)); hops++
      :: !HAS(bucket[0], V) && HAS(bucket[0], EMPTY) -> bucket[0] = BUMP(PUT(bucket[0], V)); hops++
      :: HAS(bucket[1], V) -> bucket[1] = BUMP(REMOVE(bucket[1], V)); hops++
      :: !HAS(bucket[1], V) && HAS(bucket[1], EMPTY) -> bucket[1] = BUMP(PUT(bucket[1], V)); hops++
      :: else -> skip
      fi
    }
  :: hops >= MAX_HOPS -> break
  od
}

proctype churn() {
  byte i, w, nw;
  do
  :: if
    :: i = 0
    :: i = 1
    fi;
    w = bucket[i];
    if
    :: HAS(w, U) -> nw = REMOVE(w, U)
    :: !HAS(w, U) && HAS(w, EMPTY) -> nw = PUT(w, U)
    :: else -> nw = w
    fi;
    atomic { /* single-word CAS: insert or erase, counter unchanged */
      if
      :: bucket[i] == w -> bucket[i] = nw
      :: else -> skip
      fi
    };
    i = 0; w = 0; nw = 0
  od
}

/*
 * Each bracketed atomic block below is ONE read of one bucket word: it keeps only what the
 * lookup uses from that word (whether it holds T, and its counter), which keeps the state small.
 */
proctype lookup() {
  byte c0, c1;
  bool seen, changed;
retry:
  atomic { seen = HAS(bucket[0], T); c0 = CNT(bucket[0]) }; /* read bucket 0 */
  atomic { seen = seen || HAS(bucket[1], T); c1 = CNT(bucket[1]) }; /* read bucket 1 */
  if
  :: seen -> goto found
  :: else -> skip
  fi;
#ifndef NO_COUNTER_CHECK
  changed = (CNT(bucket[0]) != c0); /* read bucket 0 again */
  changed = changed || (CNT(bucket[1]) != c1); /* read bucket 1 again */
  if
  :: changed ->
    c0 = 0; c1 = 0; changed = false;
    goto retry
  :: else -> skip
  fi;
#endif
  /* "absent", although T was in one of the two buckets throughout: a false negative */
  assert(false);
found:
  skip
}

init {
  atomic {
    if
    :: bucket[0] = WORD(T, EMPTY, 0); bucket[1] = WORD(EMPTY, EMPTY, 0)
    :: bucket[0] = WORD(EMPTY, EMPTY, 0); bucket[1] = WORD(T, EMPTY, 0)
    fi;
    run lookup();
    run relocate_T();
#ifndef NO_FOREIGN
    run foreign_hop();
#endif
    run churn()
  }
}

/*
 * ccf — concurrent cuckoo filters.
 * read_epochs.pml: Spin model of read_epochs (include/ccf/detail/read_epochs.hpp), which tells
 * the concurrent growing filter when no lookup can still read a table that a doubling replaced.
 *
 * What is modelled
 *   Tables 0, 1, ... GROWTHS: table 0 is published first; each doubling publishes the next and
 *   frees the one it replaced. Readers count themselves in a shard (reader i in shard i % SHARDS)
 *   under the current parity. Every read or write of a shared variable is one atomic step, as the
 *   sequentially consistent atomics of the C++ code are.
 *
 * Processes
 *   reader   READS lookups, each: enter() (read the parity, add one to its shard's counter of
 *            that parity, read the parity again and, if it changed, take the one back and start
 *            over), read the published table, use it (assert that it was not freed), exit()
 *            (take the one back).
 *   writer   GROWTHS doublings, each: publish the next table, synchronize() (flip the parity,
 *            then wait, shard by shard, until the counter of the old parity is zero), free the
 *            table it replaced.
 *
 * Switches (spin -D...)
 *   READERS=n, READS=n, GROWTHS=n   sizes (defaults 2, 2, 2).
 *   NO_RECHECK   enter() without the second read of the parity: a reader that read the parity,
 *                stalled across one synchronize() and then counted itself in the old parity
 *                reads the table the next doubling frees, which waits on the other parity.
 *   NO_WAIT      synchronize() flips the parity and does not wait.
 *
 * Expected results (scripts/check_models.sh checks all of them)
 *   default      0 errors: no reader uses a freed table.
 *   NO_RECHECK   assertion violated (it takes two doublings).
 *   NO_WAIT      assertion violated.
 */

#ifndef READERS
#define READERS 2
#endif
#ifndef READS
#define READS 2
#endif
#ifndef GROWTHS
#define GROWTHS 2
#endif
#define SHARDS 2

byte parity = 0;
byte count[SHARDS * 2]; /* count[shard * 2 + parity] */
byte current = 0;       /* the table lookups read */
bool freed[GROWTHS + 1];

proctype reader(byte shard) {
  byte p, t, n = 0;
  do
  :: n < READS ->
enter:
    p = parity;
    count[shard * 2 + p]++;
#ifndef NO_RECHECK
    if
    :: parity != p -> count[shard * 2 + p]--; goto enter
    :: else -> skip
    fi;
#endif
    t = current;
    assert(!freed[t]); /* the lookup reads table t */
    count[shard * 2 + p]--;
    n++
  :: else -> break
  od
}

proctype writer() {
  byte g = 0, old, before, s;
  do
  :: g < GROWTHS ->
    old = current;
    current = g + 1; /* publish the doubled table */
    before = parity;
    parity = 1 - before;
#ifndef NO_WAIT
    s = 0;
    do
    :: s < SHARDS -> (count[s * 2 + before] == 0); s++
    :: else -> break
    od;
#endif
    freed[old] = true;
    g++
  :: else -> break
  od
}

init {
  byte i = 0;
  atomic {
    run writer();
    do
    :: i < READERS -> run reader(i % SHARDS); i++
    :: else -> break
    od
  }
}

// ccf_kv_bench: ccf::kv::store against RocksDB and LMDB on the same machine, in one run
// (docs/benchmarks.md, "Key-value store").
//
//   ccf_kv_bench [--keys N] [--threads T] [--dir D] [--quick]
//
// N keys (default 1 M) of 16 bytes with values of 100 bytes, written in a random order into each
// store under D (default: a fresh folder in /tmp; the files stay in the page cache), with the same
// durability: nothing synced per write, one sync at the end (ccf: durability::none; RocksDB:
// WriteOptions::sync = false with its write-ahead log; LMDB: MDB_NOSYNC, one transaction per
// 1,000 puts). Then random gets of present keys on one thread and on T threads (default: every
// hardware thread), each get checked. RocksDB gets its usual point-lookup setup: a 10-bit Bloom
// filter per table, a 256 MiB block cache, and a full compaction after loading. Also measured for
// ccf: index bytes per key, and reopening the store (snapshot plus a replayed tail of 1 % of the
// keys). The store is opened with options::expected_keys = N (an index sized for the keys; a
// store left to grow by doubling ends between 47 and 95 % load). Stores that this build does not
// have (no librocksdb-dev / liblmdb-dev) are skipped.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <latch>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <ccf/kv/store.hpp>

#if KV_BENCH_WITH_ROCKSDB
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#endif
#if KV_BENCH_WITH_LMDB
#include <lmdb.h>
#endif

namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::size_t key_size = 16, value_size = 100;

struct options {
  std::size_t keys = 1000000;
  unsigned threads = std::max(1U, std::thread::hardware_concurrency());
  std::string dir;
  std::size_t gets = 4000000;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "ccf_kv_bench: %s\n", what.c_str());
  std::exit(1);
}

std::string key_of(std::size_t i) {
  std::string k(key_size, '\0');
  const std::uint64_t a = ccf::mix64(i), b = ccf::mix64(i ^ 0x5555555555555555ULL);
  std::memcpy(k.data(), &a, 8);
  std::memcpy(k.data() + 8, &b, 8);
  return k;
}
std::string value_of(std::size_t i) {
  std::string v(value_size, 'v');
  const std::string n = std::to_string(i);
  std::memcpy(v.data(), n.data(), n.size());
  return v;
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Runs get(thread, i) for `per_thread` random present keys on each of `threads` threads;
/// returns gets per second.
double timed_gets(const options& o, unsigned threads,
                  const std::function<bool(unsigned, const std::string&, std::string&)>& get) {
  const std::size_t per_thread = o.gets / threads;
  std::vector<std::vector<std::string>> keys(threads);
  for (unsigned t = 0; t < threads; ++t) {
    std::mt19937_64 rng(t + 1);
    keys[t].reserve(std::min<std::size_t>(per_thread, 1 << 20));
    for (std::size_t i = 0; i < std::min<std::size_t>(per_thread, 1 << 20); ++i)
      keys[t].push_back(key_of(rng() % o.keys));
  }
  std::latch ready(threads + 1), go(1);
  std::atomic<std::size_t> misses{0};
  std::vector<std::jthread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::string value;
      ready.count_down();
      go.wait();
      std::size_t missed = 0;
      for (std::size_t i = 0; i < per_thread; ++i) {
        const std::string& k = keys[t][i % keys[t].size()];
        if (!get(t, k, value) || value.size() != value_size) ++missed;
      }
      misses += missed;
    });
  }
  ready.arrive_and_wait();
  const auto t0 = clock_type::now();
  go.count_down();
  pool.clear();
  const double s = seconds_since(t0);
  if (misses != 0) fail(std::to_string(misses.load()) + " gets of present keys failed");
  return static_cast<double>(per_thread * threads) / s;
}

struct result {
  std::string name;
  double put = 0, get1 = 0, getn = 0;
};

std::vector<std::size_t> put_order(std::size_t n) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i)
    order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
  return order;
}

result bench_ccf(const options& o) {
  const std::string dir = o.dir + "/ccf";
  result r{"ccf::kv"};
  ccf::kv::options kvo;
  kvo.sync = ccf::kv::durability::none;
  kvo.expected_keys = o.keys;  // the index sized for the keys, as for any bulk load of known size
  const auto order = put_order(o.keys);
  {
    auto s = ccf::kv::store::open(dir, kvo);
    const auto t0 = clock_type::now();
    for (std::size_t i : order)
      s->put(key_of(i), value_of(i));
    s->sync();
    r.put = static_cast<double>(o.keys) / seconds_since(t0);
    auto get = [&](unsigned, const std::string& k, std::string& v) { return s->get(k, v); };
    r.get1 = timed_gets(o, 1, get);
    r.getn = timed_gets(o, o.threads, get);
    const ccf::kv::store_stats st = s->stats();
    std::printf(
        "ccf::kv index: %zu keys, %.2f bytes/key at load %.3f (%zu doublings); "
        "log %.1f MiB\n",
        st.keys, st.index_bytes_per_key, st.index_load, st.rehashes,
        static_cast<double>(st.log_bytes) / (1 << 20));
  }
  // Reopen: from the snapshot written at close, then with a tail of 1 % of the keys to replay.
  auto t0 = clock_type::now();
  auto s = ccf::kv::store::open(dir, kvo);
  const double reopen = seconds_since(t0);
  s.reset();
  {
    // Writes past the snapshot: keep the current snapshot, write 1 % more, put it back.
    std::filesystem::copy_file(dir + "/index", o.dir + "/ccf-index-stale",
                               std::filesystem::copy_options::overwrite_existing);
    auto w = ccf::kv::store::open(dir, kvo);
    for (std::size_t i = 0; i < o.keys / 100; ++i)
      w->put(key_of(i), value_of(i + 2));
    w->close();
    std::filesystem::copy_file(o.dir + "/ccf-index-stale", dir + "/index",
                               std::filesystem::copy_options::overwrite_existing);
  }
  t0 = clock_type::now();
  auto tail = ccf::kv::store::open(dir, kvo);
  const double reopen_tail = seconds_since(t0);
  std::printf(
      "ccf::kv reopen of %zu keys: %.3f s from the snapshot, %.3f s with %llu records "
      "replayed (target <= 0.5 s)\n",
      o.keys, reopen, reopen_tail,
      static_cast<unsigned long long>(tail->opened().replayed_records));
  return r;
}

#if KV_BENCH_WITH_ROCKSDB
result bench_rocksdb(const options& o) {
  result r{"RocksDB"};
  rocksdb::Options ro;
  ro.create_if_missing = true;
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.block_cache = rocksdb::NewLRUCache(std::size_t{256} << 20);
  ro.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::Open(ro, o.dir + "/rocksdb", &raw).ok()) fail("RocksDB: cannot open");
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteOptions wo;
  wo.sync = false;
  const auto t0 = clock_type::now();
  for (std::size_t i : put_order(o.keys)) {
    if (!db->Put(wo, key_of(i), value_of(i)).ok()) fail("RocksDB: put failed");
  }
  if (!db->FlushWAL(true).ok()) fail("RocksDB: sync failed");
  r.put = static_cast<double>(o.keys) / seconds_since(t0);
  db->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr);
  auto get = [&](unsigned, const std::string& k, std::string& v) {
    return db->Get(rocksdb::ReadOptions(), k, &v).ok();
  };
  r.get1 = timed_gets(o, 1, get);
  r.getn = timed_gets(o, o.threads, get);
  return r;
}
#endif

#if KV_BENCH_WITH_LMDB
void check(int rc, const char* what) {
  if (rc != 0) fail(std::string("LMDB: ") + what + ": " + mdb_strerror(rc));
}

result bench_lmdb(const options& o) {
  result r{"LMDB"};
  const std::string dir = o.dir + "/lmdb";
  std::filesystem::create_directories(dir);
  MDB_env* env = nullptr;
  check(mdb_env_create(&env), "env");
  check(mdb_env_set_mapsize(env, std::size_t{8} << 30), "mapsize");
  check(mdb_env_set_maxreaders(env, 1024), "maxreaders");
  check(mdb_env_open(env, dir.c_str(), MDB_NOSYNC | MDB_NOTLS, 0644), "open");
  MDB_dbi dbi = 0;
  const auto order = put_order(o.keys);
  const auto t0 = clock_type::now();
  for (std::size_t b = 0; b < order.size(); b += 1000) {
    MDB_txn* txn = nullptr;
    check(mdb_txn_begin(env, nullptr, 0, &txn), "begin");
    check(mdb_dbi_open(txn, nullptr, 0, &dbi), "dbi");
    for (std::size_t j = b; j < std::min(order.size(), b + 1000); ++j) {
      std::string k = key_of(order[j]), v = value_of(order[j]);
      MDB_val mk{k.size(), k.data()}, mv{v.size(), v.data()};
      check(mdb_put(txn, dbi, &mk, &mv, 0), "put");
    }
    check(mdb_txn_commit(txn), "commit");
  }
  check(mdb_env_sync(env, 1), "sync");
  r.put = static_cast<double>(o.keys) / seconds_since(t0);
  std::vector<MDB_txn*> txns(std::max(1U, o.threads), nullptr);
  std::vector<std::size_t> uses(txns.size(), 0);
  auto get = [&](unsigned t, const std::string& k, std::string& v) {
    if (txns[t] == nullptr) check(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txns[t]), "begin");
    if (++uses[t] % 1024 == 0) {
      mdb_txn_reset(txns[t]);
      check(mdb_txn_renew(txns[t]), "renew");
    }
    MDB_val mk{k.size(), const_cast<char*>(k.data())}, mv{};
    if (mdb_get(txns[t], dbi, &mk, &mv) != 0) return false;
    v.assign(static_cast<const char*>(mv.mv_data), mv.mv_size);
    return true;
  };
  r.get1 = timed_gets(o, 1, get);
  for (MDB_txn*& t : txns) {
    if (t != nullptr) mdb_txn_abort(t);
    t = nullptr;
  }
  r.getn = timed_gets(o, o.threads, get);
  for (MDB_txn* t : txns) {
    if (t != nullptr) mdb_txn_abort(t);
  }
  mdb_env_close(env);
  return r;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail("missing value after " + a);
      return argv[++i];
    };
    if (a == "--keys") {
      o.keys = std::stoull(value());
    } else if (a == "--threads") {
      o.threads = static_cast<unsigned>(std::max(1, std::stoi(value())));
    } else if (a == "--dir") {
      o.dir = value();
    } else if (a == "--quick") {
      o.keys = 20000;
      o.gets = 100000;
    } else {
      std::fprintf(stderr, "usage: ccf_kv_bench [--keys N] [--threads T] [--dir D] [--quick]\n");
      return a == "--help" ? 0 : 1;
    }
  }
  const bool own_dir = o.dir.empty();
  if (own_dir) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ccf-kv-bench-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) fail("cannot create a folder in /tmp");
    o.dir = tmpl;
  }
  std::printf("ccf_kv_bench: %zu keys of %zu bytes, values of %zu bytes, %u threads, in %s\n",
              o.keys, key_size, value_size, o.threads, o.dir.c_str());
  std::vector<result> results;
  results.push_back(bench_ccf(o));
#if KV_BENCH_WITH_ROCKSDB
  results.push_back(bench_rocksdb(o));
#endif
#if KV_BENCH_WITH_LMDB
  results.push_back(bench_lmdb(o));
#endif
  std::printf("%-10s %14s %14s %18s\n", "store", "put M/s", "get M/s (1)", "get M/s (threads)");
  for (const result& r : results) {
    std::printf("%-10s %14.3f %14.3f %18.3f\n", r.name.c_str(), r.put / 1e6, r.get1 / 1e6,
                r.getn / 1e6);
  }
  for (std::size_t k = 1; k < results.size(); ++k) {
    std::printf("ccf::kv / %s: put %.2fx, get (1 thread) %.2fx, get (%u threads) %.2fx\n",
                results[k].name.c_str(), results[0].put / results[k].put,
                results[0].get1 / results[k].get1, o.threads, results[0].getn / results[k].getn);
  }
  if (own_dir) std::filesystem::remove_all(o.dir);
  return 0;
}

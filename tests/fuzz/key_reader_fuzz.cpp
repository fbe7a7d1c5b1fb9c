// Fuzz target for the ccf tool's key reader (tools/key_reader.hpp, class ccf_tool::key_reader).
//
// Input: byte 0 holds flags (bit 0: '\0' as the delimiter rather than '\n'; bit 1: a before_read
// hook; bits 2-5: how many piece sizes follow), then that many piece sizes (1 to 255 bytes; 0:
// as much as the reader asks for), then the data. The reader's source hands the data out in
// pieces of those sizes, in turn, so keys straddle reads anywhere; it returns 0 only at the end.
//
// The keys read must be those of a plain split of the whole data (the rules at the top of
// key_reader.hpp: '\n' drops one trailing '\r' per key, '\0' keeps every byte, empty keys are
// skipped, the last key needs no delimiter). Also checked: when has_buffered_key() is true, the
// next call to next() does not read (neither the source nor the before_read hook is called); a
// view next() gave stays valid, holding its key, until the next read (the hook checks them all
// when it runs); the source is never asked for 0 bytes nor called again after it returned 0;
// bytes_read() is the data's size at the end, and next() keeps returning false.
// The self-test (run by the replay driver) feeds keys around key_reader::max_key_bytes: one byte
// shorter and one of exactly that many bytes are read, one byte longer throws ccf_tool::cli_error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_support.hpp"
#include "key_reader.hpp"

namespace {

using ccf_fuzz::bytes;
using ccf_tool::key_reader;

constexpr const char* target = "key_reader_fuzz";
constexpr std::size_t max_input = std::size_t{1} << 20;

void require(bool ok, const std::string& what) {
  ccf_fuzz::require(ok, target, what);
}

/// The keys of `data` by the documented rules.
std::vector<std::string_view> reference_split(std::string_view data, char delimiter) {
  std::vector<std::string_view> keys;
  while (!data.empty()) {
    const std::size_t end = data.find(delimiter);
    std::string_view key = data.substr(0, end);
    data.remove_prefix(end == std::string_view::npos ? data.size() : end + 1);
    if (delimiter == '\n' && !key.empty() && key.back() == '\r') key.remove_suffix(1);
    if (!key.empty()) keys.push_back(key);
  }
  return keys;
}

/// A source handing out `data` in pieces of the given sizes, counting its calls.
struct piece_source {
  std::string_view data;
  std::vector<std::size_t> pieces;  // 0: as much as asked for
  std::size_t pos = 0, next_piece = 0, calls = 0;
  bool ended = false;

  std::size_t operator()(char* p, std::size_t n) {
    require(!ended, "the source was read again after it returned 0");
    require(n > 0, "the source was asked for 0 bytes");
    ++calls;
    std::size_t k = std::min(n, data.size() - pos);
    if (!pieces.empty()) {
      const std::size_t piece = pieces[next_piece++ % pieces.size()];
      if (piece != 0) k = std::min(k, piece);
    }
    if (k == 0) ended = true;
    std::memcpy(p, data.data() + pos, k);
    pos += k;
    return k;
  }
};

void run(const std::uint8_t* input, std::size_t size) {
  ccf_fuzz::input_reader in(input, size);
  const std::uint8_t flags = in.byte();
  const char delimiter = (flags & 1) != 0 ? '\0' : '\n';
  const bool hook = (flags & 2) != 0;
  std::vector<std::size_t> pieces((flags >> 2) & 15);
  for (std::size_t& p : pieces)
    p = in.byte();
  const std::string data = in.rest();
  const std::vector<std::string_view> expected = reference_split(data, delimiter);

  piece_source src{data, pieces};
  std::size_t hook_calls = 0;
  // The views given since the last read, and the index of the key each must hold.
  std::vector<std::pair<std::string_view, std::size_t>> live;
  const auto check_live = [&](const char* when) {
    for (const auto& [view, i] : live) {
      require(view == expected[i],
              std::string("the view of key ") + std::to_string(i) + " changed " + when);
    }
  };
  key_reader reader(
      [&src, &live](char* p, std::size_t n) {
        live.clear();  // a read may move the buffer: the views given so far end here
        return src(p, n);
      },
      delimiter, "fuzz input");
  if (hook) {
    reader.before_read([&] {
      ++hook_calls;
      check_live("before a read");
    });
  }

  std::size_t got = 0;
  std::string_view key;
  for (std::size_t guard = 0; guard <= expected.size(); ++guard) {
    const bool buffered = reader.has_buffered_key();
    const std::size_t calls = src.calls, hooks = hook_calls;
    const bool more = reader.next(key);
    if (buffered) {
      require(src.calls == calls && hook_calls == hooks,
              "next() read although has_buffered_key() said a key was buffered (key " +
                  std::to_string(got) + ")");
    }
    if (!more) break;
    require(got < expected.size(), "more keys than the data holds");
    require(key == expected[got], "key " + std::to_string(got) + " is wrong");
    live.emplace_back(key, got);
    check_live("before the next read");
    ++got;
  }
  require(got == expected.size(),
          "the reader gave " + std::to_string(got) + " keys of " + std::to_string(expected.size()));
  require(reader.bytes_read() == data.size(), "bytes_read() is not the data's size");
  require(src.ended || data.empty() || src.pos == data.size(), "the data was not read to its end");
  require(reader.has_buffered_key(), "has_buffered_key() is false at the end of input");
  const std::size_t calls = src.calls;
  require(!reader.next(key) && !reader.next(key), "next() gave a key after the end");
  require(src.calls == calls, "next() read after the end of input");
}

/// Keys around max_key_bytes (too large for the corpus).
void self_test() {
  constexpr std::size_t max = key_reader::max_key_bytes;
  // With '\n' as the delimiter, a key may also end in a '\r' that is dropped (a line of a file
  // written on Windows): a key of max_key_bytes so ended was refused.
  for (const auto& [delimiter, cr] :
       {std::pair{'\n', false}, std::pair{'\n', true}, std::pair{'\0', false}}) {
    for (const std::size_t length : {max - 1, max, max + 1}) {
      for (const bool last : {false, true}) {  // a delimiter after the long key, or end of input
        std::string data = "a";
        data += delimiter;
        data.append(length, 'x');
        if (cr) data += '\r';
        if (!last) {
          data += delimiter;
          data += "b";
        }
        piece_source src{data, {}};
        key_reader reader(std::ref(src), delimiter, "long keys");
        std::string_view key;
        bool thrown = false;
        std::size_t keys = 0;
        try {
          while (reader.next(key)) {
            require(keys != 1 || key.size() == length, "the long key was cut");
            ++keys;
          }
        } catch (const ccf_tool::cli_error&) {
          thrown = true;
        }
        const std::string what = "a key of max_key_bytes" +
                                 std::string(length < max   ? " - 1"
                                             : length > max ? " + 1"
                                                            : "") +
                                 " bytes" + (cr ? " and a \\r" : "") + (last ? " at the end" : "");
        if (length > max) {
          require(thrown && keys == 1, what + " was not refused with cli_error");
        } else {
          require(!thrown && keys == (last ? 2u : 3u), what + " was not read");
        }
      }
    }
  }
  // A long key in small reads (a slow pipe). Each read searched the whole partial key again,
  // some 7 * 10^10 bytes for this one, now its length: this checks the answers, which were right
  // before too; the cost shows as this test's time.
  std::string data(std::size_t{1} << 20, 'x');
  data += "\nb";
  piece_source src{data, {8}};
  key_reader reader(std::ref(src), '\n', "a long key in small reads");
  std::string_view key;
  require(reader.next(key) && key.size() == (std::size_t{1} << 20), "the long key was not read");
  require(reader.next(key) && key == "b" && !reader.next(key), "the key after it was not read");
  std::printf("%s: self-test of keys around max_key_bytes done\n", target);
}

std::vector<ccf_fuzz::seed> seeds() {
  std::vector<ccf_fuzz::seed> s;
  const auto add = [&](std::string name, std::uint8_t flags, bytes pieces, std::string data) {
    bytes in{static_cast<std::uint8_t>(flags | (pieces.size() << 2))};
    in.insert(in.end(), pieces.begin(), pieces.end());
    in.insert(in.end(), data.begin(), data.end());
    s.push_back({std::move(name), std::move(in)});
  };
  const std::string lines = "alpha\nbeta\ngamma\n\ndelta\nepsilon";
  add("lines-whole", 0, {}, lines);
  add("lines-bytewise", 2, {1}, lines);
  add("lines-pieces", 0, {3, 1, 7, 2}, lines + "\n");
  add("crlf", 2, {2, 5}, "one\r\ntwo\r\n\r\nthree\r\r\n\r\nfour\rfive\r");
  add("cr-only-lines", 0, {1, 0}, "\r\n\r\n\r\nx\r\n\r");
  add("empty", 0, {}, "");
  add("only-newlines", 2, {4}, "\n\n\n\n\n");
  add("no-final-newline", 0, {6}, "first\nsecond\nlast-without");
  add("nul-separated", 1, {3, 1}, std::string("a\nb\0c\r\0\0d\te\0", 12) + "tail");
  add("nul-with-hook", 3, {1, 2, 3}, std::string("x\0\0yy\0zzz\0", 10));
  add("nul-only", 1, {}, std::string("\0\0\0", 3));
  add("binary", 2, {13, 1}, std::string("\xff\xfe\n\x01\x02\r\n\x80", 8));
  {
    std::string many;
    for (int i = 0; i < 300; ++i)
      many += "key-" + std::to_string(i) + (i % 7 == 0 ? "\r\n" : "\n");
    add("many-keys", 2, {0, 37, 200, 1}, many);
    add("many-keys-whole", 0, {}, many);
  }
  {  // keys longer than the reader's first buffer (it grows), straddling reads
    std::string big(70000, 'k');
    big += "\nshort\n";
    big += std::string(140000, 'q');
    add("long-keys", 2, {0, 255}, big);
    add("long-keys-nul", 1, {0}, std::string(66000, 'z') + '\0' + "end");
  }
  return s;
}

}  // namespace

namespace ccf_fuzz {
const target_hooks& hooks() {
  static const target_hooks h{target, &seeds, nullptr, &self_test};
  return h;
}
}  // namespace ccf_fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > max_input) return 0;
  try {
    run(data, size);
  } catch (const std::exception& e) {
    ccf_fuzz::fail(target, std::string("unexpected exception: ") + e.what());
  }
  return 0;
}

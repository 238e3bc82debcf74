// Matcher building blocks for the step splitter's patterns (step_patterns.cpp): Python `re`
// semantics on ASCII text, without a regex engine.
//
// A matcher is a callable m(text, pos, k) that tries its element at `pos` and, for each way
// it can match (in the order `re` tries them: greedy counts from the most down, alternatives
// left to right), calls the continuation k(end); the first continuation that succeeds gives
// the match's end, kFail says none did. This is `re`'s backtracking, made explicit: every
// repeat is bounded (the patterns have no nested unbounded repetition), so a match attempt
// costs a bounded number of steps and a scan is linear in the text.
//
// Character classes follow `re` on ASCII str patterns: \s is [ \t\n\r\x0b\x0c\x1c-\x1f]
// (str.isspace), \w is [A-Za-z0-9_], \b is a change between \w and not \w (the text's ends
// count as not \w), IGNORECASE is ASCII case folding.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace toolsift::stepre {

using Text = std::string_view;
using Pos = std::ptrdiff_t;
constexpr Pos kFail = -1;

constexpr bool is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }
constexpr bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
constexpr bool is_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
constexpr bool is_word(unsigned char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
constexpr char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

inline Pos size_of(Text t) { return static_cast<Pos>(t.size()); }
inline unsigned char at(Text t, Pos p) { return static_cast<unsigned char>(t[static_cast<std::size_t>(p)]); }
inline bool word_at(Text t, Pos p) { return p >= 0 && p < size_of(t) && is_word(at(t, p)); }
inline bool boundary(Text t, Pos p) { return word_at(t, p - 1) != word_at(t, p); }

// Character predicates: one of / none of a few listed characters (a 128-bit set; text
// bytes are ASCII).
class CharSet {
 public:
  constexpr explicit CharSet(std::string_view chars, bool space = false) {
    for (const char c : chars) add(static_cast<unsigned char>(c));
    if (space) {
      for (unsigned c = 0; c < 128; ++c) {
        if (is_space(static_cast<unsigned char>(c))) add(static_cast<unsigned char>(c));
      }
    }
  }
  constexpr bool has(unsigned char c) const { return c < 128 && ((bits_[c >> 6] >> (c & 63)) & 1U); }

 private:
  constexpr void add(unsigned char c) { bits_[(c >> 6) & 1] |= std::uint64_t{1} << (c & 63); }
  std::uint64_t bits_[2] = {0, 0};
};
struct OneOf {
  CharSet set;
  constexpr explicit OneOf(std::string_view chars) : set(chars) {}
  constexpr bool operator()(unsigned char c) const { return set.has(c); }
};
struct NoneOf {
  CharSet set;
  constexpr explicit NoneOf(std::string_view chars) : set(chars) {}
  constexpr bool operator()(unsigned char c) const { return !set.has(c); }
};
// \s or one of a few characters ("[\s,;:]").
struct SpaceOr {
  CharSet set;
  constexpr explicit SpaceOr(std::string_view chars) : set(chars, true) {}
  constexpr bool operator()(unsigned char c) const { return set.has(c); }
};
struct Space {
  bool operator()(unsigned char c) const { return is_space(c); }
};
struct NotSpace {
  bool operator()(unsigned char c) const { return !is_space(c); }
};
struct Digit {
  bool operator()(unsigned char c) const { return is_digit(c); }
};
struct Alpha {
  bool operator()(unsigned char c) const { return is_alpha(c); }
};
struct WordChar {
  bool operator()(unsigned char c) const { return is_word(c); }
};

// Whether `w` (lower-case when `fold`) occurs at `p`; `fold`: IGNORECASE.
inline bool literal_at(Text t, Pos p, std::string_view w, bool fold) {
  if (p < 0 || p + static_cast<Pos>(w.size()) > size_of(t)) return false;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const char c = t[static_cast<std::size_t>(p) + i];
    if ((fold ? lower(c) : c) != w[i]) return false;
  }
  return true;
}

// The accepting continuation: a whole match ends where it is called.
struct Accept {
  Pos operator()(Pos q) const { return q; }
};

// One character of a class.
template <class P>
auto one(P pred) {
  return [pred](Text t, Pos p, auto&& k) -> Pos { return p < size_of(t) && pred(at(t, p)) ? k(p + 1) : kFail; };
}
inline auto ch(char c) {
  return [c](Text t, Pos p, auto&& k) -> Pos {
    return p < size_of(t) && t[static_cast<std::size_t>(p)] == c ? k(p + 1) : kFail;
  };
}

// class{lo,hi}, greedy: the longest run first, then one shorter at a time.
template <class P>
auto rep(P pred, int lo, int hi) {
  return [pred, lo, hi](Text t, Pos p, auto&& k) -> Pos {
    const Pos n = size_of(t);
    Pos c = 0;
    while (c < hi && p + c < n && pred(at(t, p + c))) ++c;
    for (; c >= lo; --c) {
      const Pos r = k(p + c);
      if (r >= 0) return r;
    }
    return kFail;
  };
}

// A literal; `lit` under IGNORECASE (written in lower case), `exact` without.
inline auto lit(std::string_view w) {
  return [w](Text t, Pos p, auto&& k) -> Pos {
    return literal_at(t, p, w, true) ? k(p + static_cast<Pos>(w.size())) : kFail;
  };
}
inline auto exact(std::string_view w) {
  return [w](Text t, Pos p, auto&& k) -> Pos {
    return literal_at(t, p, w, false) ? k(p + static_cast<Pos>(w.size())) : kFail;
  };
}

// An alternation of literals (IGNORECASE), tried in the order written.
template <class... S>
auto words(S... ws) {
  const std::array<std::string_view, sizeof...(S)> all{ws...};
  return [all](Text t, Pos p, auto&& k) -> Pos {
    for (const std::string_view w : all) {
      if (literal_at(t, p, w, true)) {
        const Pos r = k(p + static_cast<Pos>(w.size()));
        if (r >= 0) return r;
      }
    }
    return kFail;
  };
}

template <class A>
auto seq(A a) {
  return a;
}
template <class A, class... R>
auto seq(A a, R... r) {
  auto rest = seq(r...);
  return [a, rest](Text t, Pos p, auto&& k) -> Pos { return a(t, p, [&](Pos q) -> Pos { return rest(t, q, k); }); };
}

template <class A>
auto alt(A a) {
  return a;
}
template <class A, class... R>
auto alt(A a, R... r) {
  auto rest = alt(r...);
  return [a, rest](Text t, Pos p, auto&& k) -> Pos {
    const Pos x = a(t, p, k);
    return x >= 0 ? x : rest(t, p, k);
  };
}

// (?:a)? greedy: with `a` first, then without.
template <class A>
auto opt(A a) {
  return [a](Text t, Pos p, auto&& k) -> Pos {
    const Pos x = a(t, p, k);
    return x >= 0 ? x : k(p);
  };
}

// (?:a){lo,hi} greedy for a group `a` (which never matches empty here).
template <class A>
auto group_rep(A a, int lo, int hi) {
  return [a, lo, hi](Text t, Pos p, auto&& k) -> Pos {
    auto go = [&](auto& self, Pos q, int count) -> Pos {
      if (count < hi) {
        const Pos x = a(t, q, [&](Pos e) -> Pos { return e == q ? kFail : self(self, e, count + 1); });
        if (x >= 0) return x;
      }
      return count >= lo ? k(q) : kFail;
    };
    return go(go, p, 0);
  };
}

// Zero-width assertions.
template <class F>
auto when(F test) {
  return [test](Text t, Pos p, auto&& k) -> Pos { return test(t, p) ? k(p) : kFail; };
}
inline auto bol() {
  return when([](Text, Pos p) { return p == 0; });
}
inline auto bnd() {
  return when([](Text t, Pos p) { return boundary(t, p); });
}
template <class A>
auto ahead(A a) {
  return when([a](Text t, Pos p) { return a(t, p, Accept{}) >= 0; });
}
template <class A>
auto not_ahead(A a) {
  return when([a](Text t, Pos p) { return a(t, p, Accept{}) < 0; });
}

// A capturing group: `span` holds the group's span on the path that matched, and is put
// back when a path through it fails (what `re` reports; a group off the path is unset).
struct Span {
  Pos start = kFail, end = kFail;
  bool set() const { return start >= 0; }
};
template <class A>
auto cap(Span& span, A a) {
  return [&span, a](Text t, Pos p, auto&& k) -> Pos {
    return a(t, p, [&](Pos e) -> Pos {
      const Span saved = span;
      span = {p, e};
      const Pos r = k(e);
      if (r < 0) span = saved;
      return r;
    });
  };
}

// The end of the match of `m` at `p`, or kFail.
template <class M>
Pos match_at(const M& m, Text t, Pos p) {
  return m(t, p, Accept{});
}

// Whether `m` matches anywhere at or after `from` (pattern.search(text, from) is not None).
template <class M>
bool found(const M& m, Text t, Pos from = 0) {
  for (Pos p = from; p <= size_of(t); ++p) {
    if (m(t, p, Accept{}) >= 0) return true;
  }
  return false;
}

}  // namespace toolsift::stepre

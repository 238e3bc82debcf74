// toolsift::StepSplitter: the clauses (step_clauses.cpp) merged into steps, as
// decompose.steps does it: _is_request, _merge, _steps, several_steps and may_split.
#include "toolsift/step_split.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "step_patterns.h"
#include "step_pipeline.h"

namespace toolsift {

using stepre::Pos;
using stepre::Text;

namespace {

std::vector<std::string> sorted_unique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

bool listed(const std::vector<std::string>& sorted, std::string_view w) {
  return std::binary_search(sorted.begin(), sorted.end(), w,
                            [](const auto& a, const auto& b) { return std::string_view(a) < std::string_view(b); });
}

Text after(Text s, Pos end) { return end >= 0 ? s.substr(static_cast<std::size_t>(end)) : s; }

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out.append(i ? " " : "").append(parts[i]);
  return out;
}

// lexicon._strip_polite(clause): the politeness taken off both ends.
std::string strip_polite(Text clause) {
  const Text whole = stepre::strip(clause);
  Text s = whole;
  for (int i = 0; i < 4; ++i) {  // openers stack: "Hi, can you please help me to ..."
    const Text next = stepre::lstrip_chars(after(s, stepre::polite(s)), " ,");
    if (next.size() == s.size()) break;
    s = next;
  }
  const Pos searching = stepre::searching(s);
  std::string out = searching >= 0 ? "Find " + std::string(s.substr(static_cast<std::size_t>(searching))) : std::string(s);
  // Every match of _TRAILING_POLITE holds "for", "please" or "thank" (lexicon's shortcut).
  std::string low = out;
  for (char& c : low) c = stepre::lower(c);
  if (low.find("for") != std::string::npos || low.find("please") != std::string::npos ||
      low.find("thank") != std::string::npos) {
    const Pos cut = stepre::trailing_polite(out);
    if (cut >= 0) out.resize(static_cast<std::size_t>(cut));
  }
  const Text kept = stepre::strip(out);
  return std::string(kept.empty() ? whole : kept);
}

// The first _WORD match ([A-Za-z']{1,40}) of `text`, or an empty view.
Text first_word(Text text) {
  const auto word = [](char c) { return stepre::is_alpha(static_cast<unsigned char>(c)) || c == '\''; };
  std::size_t a = 0;
  while (a < text.size() && !word(text[a])) ++a;
  std::size_t b = a;
  while (b < text.size() && b - a < 40 && word(text[b])) ++b;
  return text.substr(a, b - a);
}

}  // namespace

StepSplitter::StepSplitter(std::vector<std::string> verbs, std::vector<std::string> abbrev,
                           std::vector<std::string> clause_words, StageNeeds stage_needs, std::size_t max_chars)
    : verbs_(sorted_unique(std::move(verbs))),
      abbrev_(sorted_unique(std::move(abbrev))),
      clause_words_(sorted_unique(std::move(clause_words))),
      max_chars_(max_chars) {
  if (stage_needs.size() != 5) throw std::invalid_argument("StepSplitter: word groups for five clause splitters");
  for (const auto& groups : stage_needs) {
    auto& stage = stage_groups_.emplace_back();
    for (const auto& group : groups) {
      auto& ids = stage.emplace_back();
      for (const std::string& w : group) {
        if (w.empty() || static_cast<unsigned char>(w[0]) >= 128) throw std::invalid_argument("StepSplitter: ASCII words");
        const auto at = std::find(need_words_.begin(), need_words_.end(), w);
        ids.push_back(static_cast<std::size_t>(at - need_words_.begin()));
        if (at == need_words_.end()) {
          if (need_words_.size() < 64) by_first_[static_cast<unsigned char>(w[0])].push_back(static_cast<std::uint8_t>(need_words_.size()));
          need_words_.push_back(w);
        }
      }
    }
  }
}

unsigned StepSplitter::stages_to_run(std::string_view low) const {
  using stepre::is_alpha;
  if (need_words_.size() > 64) return 0x1F;  // more words than the mask holds: run every stage
  // Which of the words occur in `low` (bit i: need_words_[i]): one pass, trying at each
  // position the words that open with its character. A word that opens with a letter is
  // looked for only after a character that is not one: in every match of the clause
  // patterns each of their words follows whitespace or [,;:] (Python looks for it anywhere;
  // either way a sentence without it has no match).
  std::uint64_t present = 0;
  for (std::size_t p = 0; p < low.size(); ++p) {
    const auto c = static_cast<unsigned char>(low[p]);
    if (c >= 128 || (is_alpha(c) && p > 0 && is_alpha(static_cast<unsigned char>(low[p - 1])))) continue;
    for (const std::uint8_t id : by_first_[c]) {
      const std::string& w = need_words_[id];
      if (p + w.size() > low.size()) continue;
      std::size_t i = 1;
      while (i < w.size() && low[p + i] == w[i]) ++i;
      if (i == w.size()) present |= std::uint64_t{1} << id;
    }
  }
  const auto occurs = [present](std::size_t id) { return ((present >> id) & 1U) != 0; };
  unsigned run = 0;
  for (std::size_t stage = 0; stage < stage_groups_.size(); ++stage) {
    const auto& groups = stage_groups_[stage];
    if (std::all_of(groups.begin(), groups.end(), [&](const std::vector<std::size_t>& group) {
          return std::any_of(group.begin(), group.end(), occurs);
        })) {
      run |= 1U << stage;
    }
  }
  return run;
}

bool StepSplitter::is_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

bool StepSplitter::is_verb(std::string_view w) const { return listed(verbs_, w); }
bool StepSplitter::is_abbrev(std::string_view w) const { return listed(abbrev_, w); }
bool StepSplitter::is_clause_word(std::string_view w) const { return listed(clause_words_, w); }

namespace {

// decompose.steps._is_request(clause).
bool is_request(const StepSplitter& lex, Text clause) {
  if (stepre::asks(clause) || stepre::step_opener(clause)) return true;
  const Text lead_off = after(clause, stepre::lead(clause));
  const Text fronted_off = after(lead_off, stepre::fronted(lead_off));
  const Text core = after(fronted_off, stepre::ordinal(fronted_off));
  if (core.size() != clause.size() && stepre::asks(core)) return true;  // "once done, what is ..."
  const std::string polite_off = strip_polite(core);
  const Text first = first_word(Text(polite_off).substr(0, 60));
  std::string buf;
  return !first.empty() && lex.is_verb(stepre::lowered(first, buf));
}

// _LEAD.sub("", s, count=1).strip() or s
std::string without_lead(const std::string& s) {
  const Text rest = stepre::strip(after(s, stepre::lead(s)));
  return rest.empty() ? s : std::string(rest);
}

std::vector<StepSplitter::Step> merge(const StepSplitter& lex, Text text, const std::vector<std::string>& clauses,
                                      long max_steps) {
  using Step = StepSplitter::Step;
  if (clauses.empty()) {
    std::string whole = stepre::collapse(text);
    if (whole.empty()) whole = std::string(stepre::strip(text));
    return {Step(whole, whole)};
  }
  std::vector<Step> merged;
  std::vector<std::string> pending;
  if (clauses.size() == 1) {  // one clause is one step, whether it asks for something or not
    merged.emplace_back(clauses[0], clauses[0]);
  } else {
    for (const std::string& c : clauses) {
      if (is_request(lex, c)) {
        pending.push_back(c);
        merged.emplace_back(join(pending), c);
        pending.clear();
      } else {
        pending.push_back(c);
      }
    }
  }
  if (!pending.empty()) {
    if (!merged.empty()) {
      pending.insert(pending.begin(), merged.back().first);
      merged.back().first = join(pending);
    } else {
      const std::string joined = join(pending);
      merged.emplace_back(joined, joined);
    }
  }
  const std::size_t limit = static_cast<std::size_t>(std::max(1L, max_steps));
  if (merged.size() > limit) {
    std::vector<std::string> fulls, cores;
    for (std::size_t i = limit - 1; i < merged.size(); ++i) {
      fulls.push_back(merged[i].first);
      cores.push_back(merged[i].second);
    }
    merged.resize(limit - 1);
    merged.emplace_back(join(fulls), join(cores));
  }
  for (Step& s : merged) s = Step(without_lead(s.first), without_lead(s.second));
  return merged;
}

}  // namespace

std::vector<StepSplitter::Step> StepSplitter::steps(std::string_view text, long max_steps) const {
  text = text.substr(0, max_chars_);
  if (stepre::strip(text).empty()) return {};
  return merge(*this, text, stepre::clauses(*this, text), max_steps);
}

std::vector<std::string> StepSplitter::several(std::string_view text, long max_steps) const {
  text = text.substr(0, max_chars_);
  std::vector<std::string> out;
  if (stepre::strip(text).empty()) return out;
  const std::vector<std::string> clauses = stepre::clauses(*this, text);
  if (clauses.size() < 2) return out;  // no clauses or one: one step
  std::vector<Step> merged = merge(*this, text, clauses, max_steps);
  if (merged.size() < 2) return out;
  for (Step& s : merged) out.push_back(std::move(s.first));
  return out;
}

bool StepSplitter::may_split(std::string_view text) const {
  if (stepre::has_line_break(text)) return true;
  // A clause word, whole (\b(?:and|but|...)\b): a maximal run of \w equal to one of them.
  std::string buf;
  for (std::size_t p = 0; p < text.size();) {
    if (!stepre::is_word(static_cast<unsigned char>(text[p]))) {
      ++p;
      continue;
    }
    std::size_t e = p;
    while (e < text.size() && stepre::is_word(static_cast<unsigned char>(text[e]))) ++e;
    if (e - p <= 40 && is_clause_word(stepre::lowered(text.substr(p, e - p), buf))) return true;
    p = e;
  }
  if (stepre::punct_space(text) || stepre::number_mark(text) || stepre::subord_after(text)) return true;
  // _comma_clause: a comma before a verb or a question or request opener.
  for (Pos p = 0; p < stepre::size_of(text);) {
    stepre::Span and_, word;
    const Pos e = text[static_cast<std::size_t>(p)] == ',' ? stepre::comma_word(text, p, and_, word) : stepre::kFail;
    if (e < 0) {
      ++p;
      continue;
    }
    const Text w = text.substr(static_cast<std::size_t>(word.start), static_cast<std::size_t>(word.end - word.start));
    if (is_verb(stepre::lowered(w, buf)) || stepre::clause_opener(text, word.start)) return true;
    p = e;
  }
  return false;
}

std::vector<std::string> StepSplitter::search_steps(std::string_view text, long max_steps) const {
  return may_split(text) ? several(text, max_steps) : std::vector<std::string>{};
}

}  // namespace toolsift

// SPDX-License-Identifier: MIT
// The docs include code only between markers, so a marker that is lost, doubled or
// ambiguous must fail a test before it fails (or silently shifts) a page.
//
// For every ```{literalinclude} in docs/**/*.md that uses :start-after:, :end-before:,
// :start-at: or :end-at:, the marker text must occur exactly once in the file it names
// (Sphinx takes the first match, so a second one would go unnoticed), every
// `docs-begin: NAME` must have its `docs-end: NAME` after it, and no marker name may be
// the prefix of another (`enqueue` would also match `enqueue-loop`).
//
// And what a page shows between the markers is the lesson alone: a region's code (its
// comments aside) must not hold the harness's scaffolding, the lines that report or prove
// a run rather than train it. What counts is `kScaffolding` below: the step's bookkeeping
// (`step.enqueued()`, `step.end()`), the trace and its spans, timers for the summary, the
// summary itself, the parameter check, and the rendezvous probes of --probe. A probe may
// stay only where its place between the lesson's lines is what it proves: that exact line
// is listed in `kProvingProbes` with the reason, and an entry no region holds fails too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../data/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;

/// One marker option of one literalinclude.
struct MarkerUse {
  std::string page;    // docs/chapters/00_streams.md:14
  fs::path file;       // the included file, resolved
  std::string option;  // start-after, end-before, start-at, end-at
  std::string text;    // the marker text, quotes removed
};

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim_quotes(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
    s = s.substr(1, s.size() - 2);
  }
  return s;
}

/// Every marker option of every literalinclude in `markdown`. Paths are relative to the
/// page's folder, or to `docs_root` when they start with '/', as Sphinx resolves them.
std::vector<MarkerUse> marker_uses(const std::string& markdown, const std::string& page,
                                   const fs::path& page_dir, const fs::path& docs_root) {
  static const std::regex fence(R"(^\s*(`{3,}|~{3,})\{literalinclude\}\s+(\S+)\s*$)");
  static const std::regex option(R"(^\s*:([a-z-]+):\s*(.*)$)");
  std::vector<MarkerUse> uses;
  std::istringstream in(markdown);
  std::string line;
  int line_number = 0;
  fs::path file;
  bool in_include = false;
  while (std::getline(in, line)) {
    ++line_number;
    std::smatch m;
    if (std::regex_match(line, m, fence)) {
      const std::string path = m[2];
      file = path.starts_with("/") ? docs_root / path.substr(1) : page_dir / path;
      in_include = true;
    } else if (in_include && std::regex_match(line, m, option)) {
      const std::string key = m[1];
      if (key == "start-after" || key == "end-before" || key == "start-at" || key == "end-at") {
        uses.push_back({page + ":" + std::to_string(line_number),
                        file.lexically_normal(), key, trim_quotes(m[2])});
      }
    } else {
      in_include = false;  // the options end at the first other line
    }
  }
  return uses;
}

/// Occurrences of `needle` in `haystack`, overlapping ones included.
int count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

/// The NAMEs of every `docs-begin: NAME` / `docs-end: NAME` in `source`.
std::set<std::string> marker_names(const std::string& source) {
  static const std::regex marker(R"(docs-(?:begin|end):\s*(\S+))");
  std::set<std::string> names;
  for (std::sregex_iterator it(source.begin(), source.end(), marker), end; it != end; ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

/// Every problem with `uses`; empty when the markers are sound.
std::vector<std::string> marker_problems(const std::vector<MarkerUse>& uses) {
  std::vector<std::string> problems;
  std::set<fs::path> files;
  for (const auto& use : uses) {
    if (!fs::is_regular_file(use.file)) {
      problems.push_back(use.page + ": " + use.file.string() + " does not exist");
      continue;
    }
    files.insert(use.file);
    const int n = count(read(use.file), use.text);
    if (n != 1) {
      problems.push_back(use.page + ": :" + use.option + ": \"" + use.text + "\" occurs " +
                         std::to_string(n) + " times in " + use.file.string() +
                         " (must be exactly once)");
    }
  }
  // Across every included file: begin before end, and no name the prefix of another.
  std::map<std::string, fs::path> where;
  for (const auto& file : files) {
    const std::string source = read(file);
    for (const auto& name : marker_names(source)) {
      const auto begin = source.find("docs-begin: " + name);
      const auto end = source.find("docs-end: " + name);
      if (begin == std::string::npos || end == std::string::npos || end < begin) {
        problems.push_back(file.string() + ": marker " + name +
                           " needs `docs-begin: " + name + "` followed by `docs-end: " + name + "`");
      }
      where.emplace(name, file);
    }
  }
  for (const auto& [a, file_a] : where) {
    for (const auto& [b, file_b] : where) {
      if (a != b && b.starts_with(a)) {
        problems.push_back("marker name " + a + " (" + file_a.string() + ") is a prefix of " + b +
                           " (" + file_b.string() + "); rename one");
      }
    }
  }
  return problems;
}

/// One kind of scaffolding: a pattern matched against a region's code, and what it is.
struct Scaffolding {
  std::string pattern;  // ECMAScript regex, case-insensitive
  std::string what;
};

const std::vector<Scaffolding> kScaffolding = {
    {R"(\bstep\s*\.)", "the step's bookkeeping (StepScope)"},
    {R"(probe)", "a --probe rendezvous"},
    {R"(rendezvous)", "a --probe rendezvous"},
    {R"(trace)", "the trace"},
    {R"(now_us|add_host_span|set_tower)", "a trace span or tag"},
    {R"(steady_clock|seconds_since|_started\b)", "a timer for the summary"},
    {R"(summary|extra\s*\.\s*add)", "the summary"},
    {R"(after_step|tower_bodies_run)", "a check or count for the summary"},
};

/// Lines allowed inside a region though they match kScaffolding: (marker name, the line's
/// code, trimmed), each with the reason it stays. Probes whose place between the lesson's
/// lines is what they prove, and what must sit inside one lambda with the lesson.
const std::map<std::pair<std::string, std::string>, std::string> kProvingProbes = {
    {{"serial-towers", "step.probe(tower);"},
     "chapter 2's proof: tower i+1's probe cannot be enqueued before tower i has finished"},
    {{"enqueue-towers", "step.probe(*tower);"},
     "chapter 3's probe sits where chapter 2's timed out: it meets only if the loop does not "
     "wait, so the two chapters' rendezvous compare the same place"},
    {{"iterator-towers", "step.probe(tower);"},
     "chapter 4's probe is enqueued after the iterator's next(), as chapter 3's after each "
     "enqueue: up front it would meet even if next() or the loop waited"},
    {{"sharded-step", "step.probe(tower);"},
     "chapter 8's tower loop is chapter 4's, its probe in the same place for the same reason"},
    {{"capture-step", "training.probe_round_in_capture(meet);"},
     "chapter 7's probes are nodes of the captured step: they live in the captured lambda"},
    {{"capture-step", "training.probe_in_capture(*tower);"}, "as probe_round_in_capture"},
    {{"capture-step", "++tower_bodies_run;"},
     "chapter 7 counts the runs of the captured loop's body inside that body"},
    {{"stage-op", "if (probes_here(s, op)) rendezvous->enqueue(stream);"},
     "chapter 9's probe sits after a stage's wait for its input, or it would meet trivially"},
    {{"stage-op", "stream.set_tower(op.micro_batch);"},
     "chapter 9 tags each op with its micro-batch in the lambda that enqueues it"},
    {{"model-stage-op", "stream.set_tower(mb);"}, "as stage-op's tag"},
};

/// `text` without the spaces at either end.
std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

/// `source` without its // comments (a comment may name a flag; the code may not).
std::string code_only(const std::string& source) {
  static const std::regex comment(R"(//[^\n]*)");
  return std::regex_replace(source, comment, "");
}

/// The text between `docs-begin: NAME` and `docs-end: NAME` in `source`, empty if none.
std::string region(const std::string& source, const std::string& name) {
  const std::string begin = "docs-begin: " + name, end = "docs-end: " + name;
  const auto b = source.find(begin);
  const auto e = source.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b) return "";
  const auto after = source.find('\n', b);
  return after == std::string::npos || after > e ? "" : source.substr(after + 1, e - after - 1);
}

/// Every scaffolding line in the regions `uses` include, as "file:name: line (what)";
/// `used` collects the kProvingProbes entries that allowed one.
std::vector<std::string> scaffolding_problems(
    const std::vector<MarkerUse>& uses,
    std::set<std::pair<std::string, std::string>>* used = nullptr) {
  std::vector<std::string> problems;
  std::set<std::pair<fs::path, std::string>> seen;
  static const std::regex begin_marker(R"(^docs-begin:\s*(\S+)$)");
  for (const auto& use : uses) {
    std::smatch m;
    if (!std::regex_match(use.text, m, begin_marker) || !fs::is_regular_file(use.file)) continue;
    const std::string name = m[1];
    if (!seen.emplace(use.file, name).second) continue;
    std::istringstream lines(region(read(use.file), name));
    std::string line;
    while (std::getline(lines, line)) {
      const std::string code = trim(code_only(line));
      if (kProvingProbes.contains({name, code})) {
        if (used) used->insert({name, code});
        continue;
      }
      for (const auto& kind : kScaffolding) {
        const std::regex pattern(kind.pattern, std::regex::ECMAScript | std::regex::icase);
        if (std::regex_search(code, pattern)) {  // one problem per line: its first kind
          const fs::path shown = use.file.parent_path().filename() / use.file.filename();
          problems.push_back(shown.string() + ":" + name + ": `" + trim(line) + "` is " +
                             kind.what + "; move it out of the region");
          break;
        }
      }
    }
  }
  return problems;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "  " + l + "\n";
  return out;
}

using towers::data::testing::TempDir;

/// Writes `text` to the file `name` in `dir`.
void write(const TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir.path() / name) << text;
}

const std::string kSource =
    "int main() {\n"
    "  // docs-begin: loop\n"
    "  for (;;) {}\n"
    "  // docs-end: loop\n"
    "}\n";

std::string page_including(const std::string& begin, const std::string& end) {
  return "# Page\n\n```{literalinclude} main.cpp\n:language: cpp\n:start-after: \"" + begin +
         "\"\n:end-before: \"" + end + "\"\n:dedent:\n```\n";
}

// ---- The checker, on hand-made pages: it must be able to fail. ----

TEST(DocsMarkers, CheckerAcceptsAMarkerThatOccursOnce) {
  TempDir dir;
  write(dir, "main.cpp", kSource);
  auto uses = marker_uses(page_including("docs-begin: loop", "docs-end: loop"), "page.md",
                          dir.path(), dir.path());
  ASSERT_EQ(uses.size(), 2u);
  EXPECT_EQ(uses[0].text, "docs-begin: loop");
  EXPECT_EQ(join(marker_problems(uses)), "");
}

TEST(DocsMarkers, CheckerRejectsAMissingMarker) {
  TempDir dir;
  write(dir, "main.cpp", kSource);
  auto uses = marker_uses(page_including("docs-begin: lop", "docs-end: loop"), "page.md",
                          dir.path(), dir.path());
  auto problems = marker_problems(uses);
  ASSERT_EQ(problems.size(), 1u) << join(problems);
  EXPECT_NE(problems[0].find("occurs 0 times"), std::string::npos) << problems[0];
}

TEST(DocsMarkers, CheckerRejectsAMarkerNameThatIsAPrefixOfAnother) {
  TempDir dir;
  write(dir, "main.cpp", kSource + "// docs-begin: loop-two\n// docs-end: loop-two\n");
  auto uses = marker_uses(page_including("docs-begin: loop", "docs-end: loop"), "page.md",
                          dir.path(), dir.path());
  auto problems = join(marker_problems(uses));
  EXPECT_NE(problems.find("occurs 2 times"), std::string::npos) << problems;
  EXPECT_NE(problems.find("loop (" ), std::string::npos) << problems;
}

TEST(DocsMarkers, CheckerRejectsAMissingFile) {
  TempDir dir;
  auto uses = marker_uses(page_including("docs-begin: loop", "docs-end: loop"), "page.md",
                          dir.path(), dir.path());
  auto problems = marker_problems(uses);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("does not exist"), std::string::npos) << problems[0];
}

TEST(DocsMarkers, CheckerRejectsScaffoldingInsideARegion) {
  TempDir dir;
  write(dir, "main.cpp",
        "int main() {\n"
        "  // docs-begin: loop\n"
        "  for (;;) {  // --probe and the trace may be named in a comment\n"
        "    tower_loss(tower);\n"
        "    step.enqueued();\n"
        "    trace.add_host_span(\"x\", start);\n"
        "  }\n"
        "  // docs-end: loop\n"
        "  step.end(loss);  // outside: fine\n"
        "}\n");
  auto uses = marker_uses(page_including("docs-begin: loop", "docs-end: loop"), "page.md",
                          dir.path(), dir.path());
  auto problems = scaffolding_problems(uses);
  ASSERT_EQ(problems.size(), 2u) << join(problems);  // the step's line, the trace's line
  EXPECT_NE(problems[0].find("main.cpp:loop: `step.enqueued();` is the step's bookkeeping"),
            std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("`trace.add_host_span(\"x\", start);` is the trace"),
            std::string::npos)
      << problems[1];
}

TEST(DocsMarkers, CheckerAcceptsALessonRegion) {
  TempDir dir;
  write(dir, "main.cpp", kSource);
  auto uses = marker_uses(page_including("docs-begin: loop", "docs-end: loop"), "page.md",
                          dir.path(), dir.path());
  EXPECT_EQ(join(scaffolding_problems(uses)), "");
}

// ---- The real pages. ----

/// Every marker use of every page under docs/.
std::vector<MarkerUse> docs_marker_uses() {
  const fs::path docs = fs::path(TOWERS_SOURCE_DIR) / "docs";
  std::vector<MarkerUse> uses;
  for (const auto& entry : fs::recursive_directory_iterator(docs)) {
    if (entry.path().extension() != ".md" ||
        entry.path().string().find("/_build/") != std::string::npos) {
      continue;
    }
    auto page = marker_uses(read(entry.path()),
                            fs::relative(entry.path(), TOWERS_SOURCE_DIR).string(),
                            entry.path().parent_path(), docs);
    uses.insert(uses.end(), page.begin(), page.end());
  }
  return uses;
}

TEST(DocsMarkers, NoIncludedRegionHoldsScaffolding) {
  const auto uses = docs_marker_uses();
  ASSERT_GE(uses.size(), 4u) << "found too few literalinclude markers";
  std::set<std::pair<std::string, std::string>> used;
  auto problems = scaffolding_problems(uses, &used);
  for (const auto& [entry, why] : kProvingProbes) {
    if (!used.contains(entry)) {
      problems.push_back("kProvingProbes allows `" + entry.second + "` in " + entry.first +
                         ", which no longer holds it: remove the entry");
    }
  }
  EXPECT_TRUE(problems.empty()) << "scaffolding in the docs' regions:\n" << join(problems);
}

TEST(DocsMarkers, EveryIncludedMarkerOfTheDocsOccursExactlyOnce) {
  const auto uses = docs_marker_uses();
  // Chapter 0's page includes its two loops; finding none would mean the parser broke.
  ASSERT_GE(uses.size(), 4u) << "found too few literalinclude markers";
  auto problems = marker_problems(uses);
  EXPECT_TRUE(problems.empty()) << "docs markers:\n" << join(problems);
}

}  // namespace

// The test programs' main(), compiled once into speclab_doctest_main: doctest's, plus the end
// marker tools/testrun.py looks for, and a listener that shows what a crashed case had logged.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <csetjmp>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <ostream>
#include <sstream>
#include <string>

namespace {

// ---- running a piece of code that may itself crash, from inside a crash handler ----

sigjmp_buf g_escape;
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kCrashSignalCount = sizeof(kCrashSignals) / sizeof(kCrashSignals[0]);

// Runs f() and returns true, or returns false as soon as f crashes (a bad pointer, or an abort:
// a pure virtual call aborts). Meant for a signal handler, where the crash signal is blocked and
// doctest has already put the default actions back: both are restored as they were on return.
template <typename F>
bool run_guarded(F&& f) {
  struct sigaction escape {};
  escape.sa_handler = [](int) { siglongjmp(g_escape, 1); };
  sigemptyset(&escape.sa_mask);
  struct sigaction previous[kCrashSignalCount];
  sigset_t crash_signals;
  sigemptyset(&crash_signals);
  for (int i = 0; i < kCrashSignalCount; ++i) {
    sigaction(kCrashSignals[i], &escape, &previous[i]);
    sigaddset(&crash_signals, kCrashSignals[i]);
  }
  const std::terminate_handler previous_terminate = std::set_terminate([] { std::abort(); });
  bool ok = false;
  if (sigsetjmp(g_escape, /*savemask=*/1) == 0) {  // the mask is restored on the jump back
    sigset_t mask;
    pthread_sigmask(SIG_UNBLOCK, &crash_signals, &mask);
    f();
    pthread_sigmask(SIG_SETMASK, &mask, nullptr);
    ok = true;
  }
  std::set_terminate(previous_terminate);
  for (int i = 0; i < kCrashSignalCount; ++i) sigaction(kCrashSignals[i], &previous[i], nullptr);
  return ok;
}

// ---- the listener ----

// doctest prints a case's INFO and CAPTURE messages when a check fails or an exception unwinds
// the case, but not when the case crashes (a segfault, an abort): nothing unwinds, so nothing is
// logged, and a student whose code crashed could not tell which input did it. This listener
// prints the contexts still active at the crash, outermost first, under doctest's own "CRASHED"
// line.
//
// doctest calls listeners before its reporters, so the lines are printed at test_case_end (which
// doctest's signal handler calls right after test_case_exception, and for which the console
// reporter prints nothing). This runs inside that signal handler, as doctest's own reporting does.
//
// A context can be unprintable: when the crash follows an INFO in code the compiler sees whole,
// an optimizing build may never finish building it, and asking it to print is a pure virtual
// call. run_guarded turns that into a line saying so, and the crash is still reported as itself.
class CrashContextListener final : public doctest::IReporter {
 public:
  explicit CrashContextListener(const doctest::ContextOptions& options) : out_(*options.cout) {}

  void test_case_exception(const doctest::TestCaseException& e) override {
    crashed_ = e.is_crash;
    // tools/testrun.py stops a case past its time limit with SIGTERM: not a crash of its own.
    stopped_ = e.is_crash && std::string(e.error_string.c_str()).rfind("SIGTERM", 0) == 0;
  }

  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    if (!crashed_) return;
    crashed_ = false;
    const int n = get_num_active_contexts();
    if (n == 0) return;
    out_.flush();  // doctest's lines first, whatever happens below
    const doctest::IContextScope* const* contexts = get_active_contexts();
    for (int i = 0; i < n; ++i) {
      std::ostringstream text;
      const bool printed = run_guarded([&] { contexts[i]->stringify(&text); });
      out_ << (i == 0
                   ? (stopped_ ? "  logged before it was stopped: " : "  logged before the crash: ")
                   : (stopped_ ? "                                "
                               : "                            "));
      if (!printed) {
        out_ << "(not printable from here on: the case crashed before this INFO was complete)\n";
        break;
      }
      out_ << text.str() << "\n";
    }
    out_ << "\n";
    out_.flush();
  }

  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  std::ostream& out_;
  bool crashed_ = false;
  bool stopped_ = false;
};

}  // namespace

DOCTEST_REGISTER_LISTENER("crash_contexts", 1, CrashContextListener);

namespace speclab::testing {
const std::string& case_token();  // declared for the tests in test_util.h
}  // namespace speclab::testing

namespace {
std::string g_case_token;  // set once, by main, before any case runs
}  // namespace

const std::string& speclab::testing::case_token() { return g_case_token; }

// When tools/testrun.py runs a case it puts a fresh random token in SPECLAB_CASE_TOKEN, and
// counts the case as passed only if this main prints it back after doctest has finished, with
// doctest's result, and doctest's summary before it says the case passed. Code under test that
// prints doctest's summary line itself and then ends the process (exit, _exit) never gets here,
// so its case is reported as 'exited'; code that runs after main (an atexit handler) can print
// and change the exit code, but not what was printed here. The token leaves the environment
// before any case runs, so the code under test cannot read it there; skip() prints it too.
int main(int argc, char** argv) {
  const char* raw = std::getenv("SPECLAB_CASE_TOKEN");
  g_case_token = raw != nullptr ? raw : "";
  ::unsetenv("SPECLAB_CASE_TOKEN");
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (!g_case_token.empty()) {
    std::cout << "\nspeclab-case-end " << g_case_token << " " << rc << std::endl;
  }
  return rc;
}

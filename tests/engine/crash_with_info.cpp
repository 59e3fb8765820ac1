// Cases that crash on purpose after logging with INFO and CAPTURE, for the tests "engine: a case
// that crashes shows what it logged" (tests/CMakeLists.txt), which run them through
// tools/testrun.py like any lab case and read the output. Never registered as tests themselves.
#include <doctest/doctest.h>

namespace {

int* volatile no_buffer = nullptr;  // volatile: the compiler cannot drop or move the write

void write_at(int index) { no_buffer[index] = 1; }  // SIGSEGV

// Called through volatile pointers, as a lab's tests call a student's code in another library:
// the compiler cannot see what they do, so every INFO before the call is fully built.
void (*volatile crash)(int) = write_at;

void write_through(int index) {
  INFO("inner: writing index ", index);
  crash(index);
}
void (*volatile call_writer)(int) = write_through;

}  // namespace

TEST_CASE("crashes in code it cannot see, after logging") {
  const int prompt_length = 42;
  INFO("outer: a prompt of ", prompt_length, " tokens");
  CAPTURE(prompt_length);
  call_writer(7);
}

// Here the crash follows an INFO in code the compiler sees whole, and an optimizing build may
// never finish building that INFO (nothing it can see reads it before its scope ends: GCC 12 -O2
// drops the write that makes it usable). The crash must still be reported as a segfault, with
// whatever the listener can print.
namespace {
void log_and_write(int index) {
  INFO("inline: index ", index);
  no_buffer[index] = 1;  // SIGSEGV
}
}  // namespace

TEST_CASE("crashes in inline code, after logging") { log_and_write(5); }

// A case that never ends, after logging: stopped at its time limit, it must still show what it
// had logged (which of its calls hung), as a crash does.
namespace {
volatile bool keep_going = true;  // never cleared: the loop below never ends
void spin(int round) {
  INFO("inner: round ", round);
  while (keep_going) {
  }
}
void (*volatile call_spin)(int) = spin;
}  // namespace

TEST_CASE("hangs in code it cannot see, after logging") {
  INFO("outer: a context of 5 tokens");
  call_spin(3);
}

# Test plumbing shared by every part of SpecLab.
#
# Every doctest case becomes its own ctest test, run through tools/testrun.py, which applies a
# timeout and a memory limit and turns a crash into a readable message. A crash or hang therefore
# fails only its own test.
#
#   speclab_add_doctest(<exe-target> PREFIX <name> LABELS <labels...> [TIMEOUT <s>] [MEM_MB <MiB>]
#                       [PROPERTIES ...])   MEM_MB 0 lifts the memory limit (AddressSanitizer)
#       for engine and tool tests: runs the executable directly.
#   speclab_add_lab(<labNN> DIR <folder> [MUTANTS <names...>] [LINK <libs...>] [LAB_DEPS <labs...>])
#       for a lab: the implementation under test is picked by LAB_IMPL when the tests run.

set(SPECLAB_TESTRUN ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/testrun.py)
set(SPECLAB_LABTESTS_DIR ${PROJECT_BINARY_DIR}/labtests)
set(SPECLAB_CASE_TIMEOUT 30 CACHE STRING "Seconds one test case may run before it fails")
set(SPECLAB_CASE_MEMORY_MB 2048 CACHE STRING "Address-space limit (MiB) for one test case")
set(SPECLAB_HIDDEN_TESTS_DIR "" CACHE PATH
    "Grading builds only (tools/grade): instructor-only lab tests, DIR/labNN/*.cpp")
option(SPECLAB_REFERENCE_LAB_DEPS
    "A lab's starter links its LAB_DEPS' reference solutions (tools/grade; or a student's second tree, book/lab07_real_model.md)" OFF)
if(SPECLAB_ASAN)
  set(SPECLAB_CASE_MEMORY_MB 0)  # AddressSanitizer reserves terabytes of address space
endif()

# Printers for the values of a failed check (std::vector prints its items, not "{?}"),
# force-included into every test source: tests/support/doctest_printers.h.
add_library(speclab_doctest_printers INTERFACE)
target_compile_options(speclab_doctest_printers INTERFACE
  -include ${PROJECT_SOURCE_DIR}/tests/support/doctest_printers.h)
target_link_libraries(speclab_doctest_printers INTERFACE doctest::doctest)

# One small static library holds doctest's main(), compiled once.
add_library(speclab_doctest_main STATIC ${PROJECT_SOURCE_DIR}/tests/support/doctest_main.cpp)
target_link_libraries(speclab_doctest_main PUBLIC doctest::doctest)
# Its users' sources only: included before doctest_main.cpp's own #define, the header would
# leave doctest's implementation out.
target_link_libraries(speclab_doctest_main INTERFACE speclab_doctest_printers)
target_include_directories(speclab_doctest_main PUBLIC ${PROJECT_SOURCE_DIR}/tests/support)

# Every target that builds a starter or a mutant, so one fixture can build them all.
add_custom_target(speclab_aux)

# After <target> is built, list its test cases into <list_file> and write <ctest_file>, which
# ctest includes to register one test per case. The command of each test is <runner_args> followed
# by the case name.
function(_speclab_discover target list_file ctest_file)
  cmake_parse_arguments(D "" "PREFIX" "RUNNER;PROPERTIES" ${ARGN})
  set(props_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_props.cmake)
  # Lists are handed to the script through a file, so names with ';' or spaces survive.
  # A cross build (tools/arm_check) lists the cases through its emulator.
  file(GENERATE OUTPUT ${props_file}
    CONTENT "set(RUNNER [==[${D_RUNNER}]==])\nset(PROPS [==[${D_PROPERTIES}]==])\nset(EMULATOR [==[${CMAKE_CROSSCOMPILING_EMULATOR}]==])\n")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND}
      -D EXE=$<TARGET_FILE:${target}>
      -D LIST_FILE=${list_file}
      -D CTEST_FILE=${ctest_file}
      -D PREFIX=${D_PREFIX}
      -D PROPS_FILE=${props_file}
      -P ${PROJECT_SOURCE_DIR}/cmake/discover_doctest.cmake
    VERBATIM)
  # Until <target> is built, one failing placeholder stands for its cases. It carries their labels,
  # so that `ctest -L lab01` in a tree where only a starter was built fails by name instead of
  # passing with no case run.
  set(labels "")
  list(FIND D_PROPERTIES LABELS at)
  if(at GREATER -1)
    math(EXPR at "${at} + 1")
    list(GET D_PROPERTIES ${at} labels)
  endif()
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake)
  file(WRITE ${include_file}
    "if(EXISTS \"${ctest_file}\")\n"
    "  include(\"${ctest_file}\")\n"
    "else()\n"
    "  add_test(\"${D_PREFIX}: NOT BUILT\" ${CMAKE_COMMAND} -E echo \"The cases of ${D_PREFIX} are listed once ${target} is built, and it was not when this ctest run started. If this run built it (a lab's 'build the LAB_IMPL implementation' test does), run the same ctest command again; otherwise build it first: cmake --build ${PROJECT_BINARY_DIR} --target ${target} (or build everything).\")\n"
    "  set_tests_properties(\"${D_PREFIX}: NOT BUILT\" PROPERTIES WILL_FAIL TRUE LABELS \"${labels}\")\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()

function(speclab_add_doctest target)
  cmake_parse_arguments(A "" "PREFIX;TIMEOUT;MEM_MB;CASES_FILE" "LABELS;PROPERTIES" ${ARGN})
  if(NOT A_CASES_FILE)
    set(A_CASES_FILE ${CMAKE_CURRENT_BINARY_DIR}/${target}.cases)
  endif()
  if(NOT DEFINED A_MEM_MB)
    set(A_MEM_MB ${SPECLAB_CASE_MEMORY_MB})
  endif()
  if(NOT A_PREFIX)
    set(A_PREFIX ${target})
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT ${SPECLAB_CASE_TIMEOUT})
  endif()
  math(EXPR ctest_timeout "${A_TIMEOUT} + 15")
  string(REPLACE ";" "|" labels "${A_LABELS}")  # one list element; discover_doctest.cmake splits it
  target_link_libraries(${target} PRIVATE speclab_doctest_main)
  _speclab_discover(${target}
    ${A_CASES_FILE}
    ${CMAKE_CURRENT_BINARY_DIR}/${target}_tests.cmake
    PREFIX "${A_PREFIX}"
    RUNNER ${SPECLAB_TESTRUN} case --exe $<TARGET_FILE:${target}>
           --timeout ${A_TIMEOUT} --mem-mb ${A_MEM_MB} --case
    PROPERTIES LABELS "${labels}" TIMEOUT ${ctest_timeout} SKIP_RETURN_CODE 77 ${A_PROPERTIES})
endfunction()

# Grading builds only: instructor-only cases from ${SPECLAB_HIDDEN_TESTS_DIR}/<lab>/*.cpp, compiled
# where they live (never copied into the source tree) into <lab>_hidden_solution and
# <lab>_hidden_starter. tools/grade builds and lists them; ctest never registers them.
# A hidden source is compiled like the public ones: it sees <lab>_cases' include directories and
# compile definitions and options (read when the build is generated, so those set after
# speclab_add_lab, like lab06's SPECLAB_DATA_DIR, count), and tests/<lab>/ for the public tests'
# helper headers.
function(_speclab_add_hidden_tests lab api_dir)
  file(GLOB sources CONFIGURE_DEPENDS ${SPECLAB_HIDDEN_TESTS_DIR}/${lab}/*.cpp)
  if(NOT sources)
    return()
  endif()
  add_library(${lab}_hidden_cases OBJECT EXCLUDE_FROM_ALL ${sources})
  target_link_libraries(${lab}_hidden_cases
    PUBLIC speclab_engine doctest::doctest speclab_doctest_printers speclab_warnings ${ARGN})
  target_include_directories(${lab}_hidden_cases PUBLIC ${api_dir} ${PROJECT_SOURCE_DIR}/tests/support)
  target_include_directories(${lab}_hidden_cases PRIVATE ${PROJECT_SOURCE_DIR}/tests/${lab}
    $<TARGET_PROPERTY:${lab}_cases,INCLUDE_DIRECTORIES>)
  target_compile_definitions(${lab}_hidden_cases PRIVATE
    $<TARGET_PROPERTY:${lab}_cases,COMPILE_DEFINITIONS>)
  target_compile_options(${lab}_hidden_cases PRIVATE
    $<TARGET_PROPERTY:${lab}_cases,COMPILE_OPTIONS>)
  foreach(impl solution starter)
    add_executable(${lab}_hidden_${impl} EXCLUDE_FROM_ALL $<TARGET_OBJECTS:${lab}_hidden_cases>)
    target_link_libraries(${lab}_hidden_${impl}
      PRIVATE ${lab}_${impl} ${lab}_hidden_cases speclab_doctest_main)
    set_target_properties(${lab}_hidden_${impl} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${SPECLAB_LABTESTS_DIR})
  endforeach()
endfunction()

# speclab_add_lab(labNN DIR <folder> [MUTANTS names...])
#   labs/<folder>/starter.cpp            the student's file
#   solutions/<folder>/solution.cpp      the reference
#   tests/<labNN>/*.cpp                  the lab's doctest cases
#   tests/mutants/<labNN>/<name>.mutant  known-wrong edits of the solution the tests must reject
#                                        (applied by tools/make_mutant.py at build time)
#   LINK <libs>      linked as they are to every implementation (e.g. lab01_solution)
#   LAB_DEPS <labs>  earlier labs linked with the SAME implementation as this one: the starter
#                    gets <dep>_starter (the student's own code), the solution and the mutants get
#                    <dep>_solution (so a mutant differs from the reference in one place only).
#                    A grading build (SPECLAB_REFERENCE_LAB_DEPS=ON, set by tools/grade) links
#                    <dep>_solution to the starter too: each lab is graded on its own file only,
#                    whichever other labs are graded with it and in whatever order.
function(speclab_add_lab lab)
  cmake_parse_arguments(L "" "DIR;TIMEOUT" "MUTANTS;LINK;LAB_DEPS" ${ARGN})
  if(NOT L_TIMEOUT)
    set(L_TIMEOUT ${SPECLAB_CASE_TIMEOUT})
  endif()
  math(EXPR ctest_timeout "${L_TIMEOUT} + 60")
  set(api_dir ${PROJECT_SOURCE_DIR}/labs/${L_DIR})
  file(GLOB test_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${lab}/*.cpp)

  # The lab's test cases, compiled once and linked against each implementation.
  add_library(${lab}_cases OBJECT ${test_sources})
  target_link_libraries(${lab}_cases
    PUBLIC speclab_engine doctest::doctest speclab_doctest_printers speclab_warnings ${L_LINK})
  target_include_directories(${lab}_cases PUBLIC ${api_dir} ${PROJECT_SOURCE_DIR}/tests/support)
  # Debug information: in a crash's backtrace (tools/testrun.py's gdb hint) the test's frame
  # names the line of the check that called the student's code.
  target_compile_options(${lab}_cases PRIVATE -g)
  set(dep_solutions "")
  foreach(dep IN LISTS L_LAB_DEPS)
    list(APPEND dep_solutions ${dep}_solution)
    # Only the headers: which implementation is linked is the executable's business (below).
    target_include_directories(${lab}_cases PRIVATE
      $<TARGET_PROPERTY:${dep}_solution,INTERFACE_INCLUDE_DIRECTORIES>)
  endforeach()

  set(impls solution starter stub)
  set(src_solution ${PROJECT_SOURCE_DIR}/solutions/${L_DIR}/solution.cpp)
  set(src_starter ${api_dir}/starter.cpp)
  # The stub: the starter with every todo(...) replaced by a default return (tools/make_stub.py),
  # what a student hands in who wrote nothing; no case may pass on it (the test below).
  set(src_stub ${CMAKE_CURRENT_BINARY_DIR}/stubs/${lab}.cpp)
  add_custom_command(OUTPUT ${src_stub}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/stubs
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/make_stub.py ${src_starter} ${src_stub}
    DEPENDS ${src_starter} ${PROJECT_SOURCE_DIR}/tools/make_stub.py
    COMMENT "Stub ${lab}"
    VERBATIM)
  foreach(m IN LISTS L_MUTANTS)
    list(APPEND impls mutant_${m})
    set(mutant_file ${PROJECT_SOURCE_DIR}/tests/mutants/${lab}/${m}.mutant)
    set(src_mutant_${m} ${CMAKE_CURRENT_BINARY_DIR}/mutants/${lab}/${m}.cpp)
    add_custom_command(OUTPUT ${src_mutant_${m}}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/mutants/${lab}
      COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/make_mutant.py
              ${src_solution} ${mutant_file} ${src_mutant_${m}}
      DEPENDS ${src_solution} ${mutant_file} ${PROJECT_SOURCE_DIR}/tools/make_mutant.py
      COMMENT "Mutant ${lab}/${m}"
      VERBATIM)
  endforeach()

  foreach(impl IN LISTS impls)
    set(lib ${lab}_${impl})
    set(exe ${lab}_tests_${impl})
    if(impl STREQUAL "solution")
      set(exclude "")
    else()
      set(exclude EXCLUDE_FROM_ALL)  # a student's half-done starter never breaks the main build
    endif()
    add_library(${lib} STATIC ${exclude} ${src_${impl}})
    target_include_directories(${lib} PUBLIC ${api_dir})
    if(NOT impl STREQUAL "solution")
      # The student's file is built with libstdc++'s checks: an index or std::span::last() out
      # of range aborts naming the check, where it would otherwise read past the data silently.
      # A mutant is a student's mistake, so it is built the same way.
      target_compile_definitions(${lib} PRIVATE _GLIBCXX_ASSERTIONS)
      # With debug information, a crash's backtrace (the hint tools/testrun.py prints) names the
      # line of the student's file; the code is optimized as before.
      target_compile_options(${lib} PRIVATE -g)
    endif()
    # LAB_DEPS come first, so that the starter's own <dep>_starter resolves the earlier labs'
    # symbols before any <dep>_solution another lab's LINK brings in.
    set(dep_impl solution)
    if(impl STREQUAL "starter" AND NOT SPECLAB_REFERENCE_LAB_DEPS)
      set(dep_impl starter)
    endif()
    foreach(dep IN LISTS L_LAB_DEPS)
      target_link_libraries(${lib} PUBLIC ${dep}_${dep_impl})
    endforeach()
    target_link_libraries(${lib} PUBLIC speclab_engine speclab_warnings ${L_LINK})
    add_executable(${exe} ${exclude} $<TARGET_OBJECTS:${lab}_cases>)
    target_link_libraries(${exe} PRIVATE ${lib} ${lab}_cases speclab_doctest_main)
    set_target_properties(${exe} PROPERTIES
      RUNTIME_OUTPUT_DIRECTORY ${SPECLAB_LABTESTS_DIR}
      OUTPUT_NAME ${lab}_${impl})
    if(NOT impl STREQUAL "solution")
      add_dependencies(speclab_aux ${exe})
    endif()
  endforeach()
  # Libraries other parts of the project (CLI, grader) link to get "the lab's implementation".
  set_property(GLOBAL APPEND PROPERTY SPECLAB_LABS ${lab})
  # tools/grade discovers the declared labs from these files.
  file(WRITE ${SPECLAB_LABTESTS_DIR}/${lab}.lab
    "dir=${L_DIR}\ntimeout=${L_TIMEOUT}\nmem_mb=${SPECLAB_CASE_MEMORY_MB}\n")
  if(SPECLAB_HIDDEN_TESTS_DIR)
    _speclab_add_hidden_tests(${lab} ${api_dir} ${L_LINK} ${dep_solutions})
  endif()

  # Discovery runs on the solution build; the case names are the same for every implementation.
  _speclab_discover(${lab}_tests_solution
    ${SPECLAB_LABTESTS_DIR}/${lab}.cases
    ${CMAKE_CURRENT_BINARY_DIR}/${lab}_tests.cmake
    PREFIX "${lab}"
    RUNNER ${SPECLAB_TESTRUN} lab-case --build-dir ${PROJECT_BINARY_DIR} --lab ${lab}
           --timeout ${L_TIMEOUT} --mem-mb ${SPECLAB_CASE_MEMORY_MB} --case
    PROPERTIES LABELS ${lab} TIMEOUT ${ctest_timeout} FIXTURES_REQUIRED ${lab}_impl
               SKIP_RETURN_CODE 77)

  # Builds the implementation LAB_IMPL selects, once, before the lab's cases run.
  add_test(NAME "${lab}: build the LAB_IMPL implementation"
    COMMAND ${SPECLAB_TESTRUN} lab-build --build-dir ${PROJECT_BINARY_DIR} --lab ${lab})
  set_tests_properties("${lab}: build the LAB_IMPL implementation" PROPERTIES
    LABELS ${lab} FIXTURES_SETUP ${lab}_impl RESOURCE_LOCK speclab_build_tree TIMEOUT 900)

  # The starter must compile and fail every case with its TODO message.
  add_test(NAME "starters: ${lab} fails every case with a TODO message"
    COMMAND ${SPECLAB_TESTRUN} starter-check --build-dir ${PROJECT_BINARY_DIR} --lab ${lab}
            --timeout ${L_TIMEOUT} --mem-mb ${SPECLAB_CASE_MEMORY_MB})
  set_tests_properties("starters: ${lab} fails every case with a TODO message" PROPERTIES
    LABELS starters FIXTURES_REQUIRED speclab_aux_built TIMEOUT 600)

  # A stub that only returns defaults must pass no case: a case it passes gives points for no work.
  add_test(NAME "starters: ${lab} gives no case to a stub that only returns defaults"
    COMMAND ${SPECLAB_TESTRUN} stub-check --build-dir ${PROJECT_BINARY_DIR} --lab ${lab}
            --timeout ${L_TIMEOUT} --mem-mb ${SPECLAB_CASE_MEMORY_MB})
  set_tests_properties("starters: ${lab} gives no case to a stub that only returns defaults"
    PROPERTIES LABELS starters FIXTURES_REQUIRED speclab_aux_built TIMEOUT 600)

  # Each mutant must fail at least one case.
  foreach(m IN LISTS L_MUTANTS)
    add_test(NAME "mutants: ${lab}/${m} is caught"
      COMMAND ${SPECLAB_TESTRUN} mutant --build-dir ${PROJECT_BINARY_DIR} --lab ${lab} --mutant ${m}
              --timeout ${L_TIMEOUT} --mem-mb ${SPECLAB_CASE_MEMORY_MB})
    set_tests_properties("mutants: ${lab}/${m} is caught" PROPERTIES
      LABELS mutants FIXTURES_REQUIRED speclab_aux_built TIMEOUT 600 SKIP_RETURN_CODE 77)
  endforeach()
endfunction()

# speclab_add_header_mutants(<group> TEST_TARGET <exe> HEADER <path from the project root>
#                            MUTANTS <names...>)
#   Engine mutants: tests/mutants/<group>/<name>.mutant edits a header-only engine file; the
#   test executable is rebuilt with the edited copy first on its include path, and
#   "mutants: <group>/<name> is caught" checks that at least one of its cases fails.
#   The test target must be registered with speclab_add_doctest(... CASES_FILE
#   ${SPECLAB_LABTESTS_DIR}/<group>.cases).
function(speclab_add_header_mutants group)
  cmake_parse_arguments(H "" "TEST_TARGET;HEADER" "MUTANTS" ${ARGN})
  get_target_property(sources ${H_TEST_TARGET} SOURCES)
  get_target_property(libs ${H_TEST_TARGET} LINK_LIBRARIES)
  get_target_property(incs ${H_TEST_TARGET} INCLUDE_DIRECTORIES)
  foreach(m IN LISTS H_MUTANTS)
    set(root ${CMAKE_CURRENT_BINARY_DIR}/mutants/${group}/${m})
    _speclab_mutated_copy(${group} ${m} ${H_HEADER} mutated)
    set(exe ${group}_mutant_${m})
    add_executable(${exe} EXCLUDE_FROM_ALL ${sources} ${mutated})
    target_include_directories(${exe} BEFORE PRIVATE ${root})
    target_include_directories(${exe} PRIVATE ${incs})
    target_link_libraries(${exe} PRIVATE ${libs})
    _speclab_add_mutant_test(${group} ${m} ${SPECLAB_CASE_TIMEOUT} ${SPECLAB_CASE_MEMORY_MB} "")
  endforeach()
endfunction()

# speclab_add_source_mutants(<group> TEST_TARGET <exe> LIBRARY <lib> SOURCE <path from the root>
#                            MUTANTS <names...> [TIMEOUT <s>] [MEM_MB <MiB>] [LABELS <labels...>])
#   Engine mutants of a source file: tests/mutants/<group>/<name>.mutant edits SOURCE, the one
#   source of the static library LIBRARY; a copy of LIBRARY is built from the edited file (with
#   LIBRARY's options and links), and the test executable is built again against that copy.
#   "mutants: <group>/<name> is caught" then checks that at least one of its cases fails, and is
#   SKIPPED when every case skipped (the GPU mutants on a machine without a GPU). TIMEOUT and
#   MEM_MB are each case's limits, as the test target's own cases get them. The test target must
#   be registered with speclab_add_doctest(... CASES_FILE ${SPECLAB_LABTESTS_DIR}/<group>.cases).
function(speclab_add_source_mutants group)
  cmake_parse_arguments(S "" "TEST_TARGET;LIBRARY;SOURCE;TIMEOUT;MEM_MB" "MUTANTS;LABELS"
                        ${ARGN})
  if(NOT DEFINED S_TIMEOUT)
    set(S_TIMEOUT ${SPECLAB_CASE_TIMEOUT})
  endif()
  if(NOT DEFINED S_MEM_MB)
    set(S_MEM_MB ${SPECLAB_CASE_MEMORY_MB})
  endif()
  get_target_property(sources ${S_TEST_TARGET} SOURCES)
  get_target_property(libs ${S_TEST_TARGET} LINK_LIBRARIES)
  get_target_property(incs ${S_TEST_TARGET} INCLUDE_DIRECTORIES)
  get_target_property(defs ${S_TEST_TARGET} COMPILE_DEFINITIONS)
  list(REMOVE_ITEM libs ${S_LIBRARY})
  get_target_property(lib_links ${S_LIBRARY} LINK_LIBRARIES)
  get_target_property(lib_options ${S_LIBRARY} COMPILE_OPTIONS)
  foreach(m IN LISTS S_MUTANTS)
    _speclab_mutated_copy(${group} ${m} ${S_SOURCE} mutated)
    set(exe ${group}_mutant_${m})
    add_library(${exe}_lib STATIC EXCLUDE_FROM_ALL ${mutated})
    target_link_libraries(${exe}_lib PRIVATE ${lib_links})
    if(lib_options)
      target_compile_options(${exe}_lib PRIVATE ${lib_options})
    endif()
    add_executable(${exe} EXCLUDE_FROM_ALL ${sources})
    target_include_directories(${exe} PRIVATE ${incs})
    if(defs)
      target_compile_definitions(${exe} PRIVATE ${defs})
    endif()
    target_link_libraries(${exe} PRIVATE ${exe}_lib ${lib_links} ${libs})
    _speclab_add_mutant_test(${group} ${m} ${S_TIMEOUT} ${S_MEM_MB} "${S_LABELS}")
  endforeach()
endfunction()

# The rule that writes tests/mutants/<group>/<m>.mutant's edit of <path> (from the project root)
# to mutants/<group>/<m>/<path> in this build folder; <out_var> gets that file's path.
function(_speclab_mutated_copy group m path out_var)
  set(mutated ${CMAKE_CURRENT_BINARY_DIR}/mutants/${group}/${m}/${path})
  set(mutant_file ${PROJECT_SOURCE_DIR}/tests/mutants/${group}/${m}.mutant)
  set(original ${PROJECT_SOURCE_DIR}/${path})
  get_filename_component(mutated_dir ${mutated} DIRECTORY)
  add_custom_command(OUTPUT ${mutated}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${mutated_dir}
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/make_mutant.py
            ${original} ${mutant_file} ${mutated}
    DEPENDS ${original} ${mutant_file} ${PROJECT_SOURCE_DIR}/tools/make_mutant.py
    COMMENT "Mutant ${group}/${m}"
    VERBATIM)
  set(${out_var} ${mutated} PARENT_SCOPE)
endfunction()

# The ctest test "mutants: <group>/<m> is caught" for the executable <group>_mutant_<m> (built
# into labtests/ by speclab_aux), its cases run under <timeout> s and <mem_mb> MiB each; labels
# `mutants` and <labels>. Exit 77 (every case skipped) reports it SKIPPED.
function(_speclab_add_mutant_test group m timeout mem_mb labels)
  set(exe ${group}_mutant_${m})
  set(all_labels mutants ${labels})
  set_target_properties(${exe} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${SPECLAB_LABTESTS_DIR})
  add_dependencies(speclab_aux ${exe})
  add_test(NAME "mutants: ${group}/${m} is caught"
    COMMAND ${SPECLAB_TESTRUN} mutant --build-dir ${PROJECT_BINARY_DIR} --lab ${group} --mutant ${m}
            --timeout ${timeout} --mem-mb ${mem_mb})
  set_tests_properties("mutants: ${group}/${m} is caught" PROPERTIES
    LABELS "${all_labels}" FIXTURES_REQUIRED speclab_aux_built TIMEOUT 600
    SKIP_RETURN_CODE 77)
endfunction()

# Call once, after every lab is declared: the fixture that builds all starters and mutants. It
# builds on every core this machine had when it was configured: `cmake --build` alone builds one
# file at a time with Makefiles, and over a hundred mutant programs took more than 7 minutes on
# 16 cores before `ctest -L gpu` could run its 7 tests.
function(speclab_finish_labs)
  cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
  add_test(NAME "build: starters and mutants"
    COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target speclab_aux --parallel ${cores})
  set_tests_properties("build: starters and mutants" PROPERTIES
    FIXTURES_SETUP speclab_aux_built RESOURCE_LOCK speclab_build_tree TIMEOUT 1200 LABELS build)
endfunction()

# ctest reads CTestCustom.cmake from the build tree: print the mutant report and the reasons for
# skipped cases after each run (ctest itself shows a skip's reason only with -V).
file(WRITE ${PROJECT_BINARY_DIR}/CTestCustom.cmake
  "set(CTEST_CUSTOM_PRE_TEST \"${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/testrun.py mutant-report --build-dir ${PROJECT_BINARY_DIR} --clear\" \"${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/testrun.py skip-report --build-dir ${PROJECT_BINARY_DIR} --clear\")\n"
  "set(CTEST_CUSTOM_POST_TEST \"${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/testrun.py mutant-report --build-dir ${PROJECT_BINARY_DIR}\" \"${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/testrun.py skip-report --build-dir ${PROJECT_BINARY_DIR}\")\n")

# Run after cairn_tests is linked (cmake -P): lists its test cases and
# writes a ctest file with one test per GoogleTest suite, each running that
# suite's cases in one process. A test per case (gtest_discover_tests) starts
# the binary 536 times; under the sanitizers each start costs 0.3-0.7 s of
# CPU (registering instrumented globals), a third of a stage's test time.
#
# Inputs: TEST_EXECUTABLE, OUTPUT (the file to write), LONG_FILTER (what is
# registered on its own, colon-separated: cases, which their suite's run
# leaves out, and whole suites as "Suite.*", which get no run here), TIMEOUT.
cmake_minimum_required(VERSION 3.25)

execute_process(
  COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
  OUTPUT_VARIABLE listing
  ERROR_VARIABLE listing_errors
  RESULT_VARIABLE status
  TIMEOUT 120)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${status}):\n${listing}${listing_errors}")
endif()

# The listing: "Suite." lines, each followed by its cases indented by two
# spaces; either may end with a "  # GetParam() = ..." comment.
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
string(REPLACE ":" ";" long_tests "${LONG_FILTER}")
# A suite listed whole, or whose every case is listed, gets no run here;
# excluded.<suite> collects its listed cases.
set(suites)
set(cases 0)
set(suite)
foreach(line IN LISTS lines)
  string(REGEX REPLACE "  #.*" "" line "${line}")
  if(line MATCHES "^([^ ].*)\\.$")
    set(suite "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^  ([^ ]+)$" AND suite)
    math(EXPR cases "${cases} + 1")
    set(case "${suite}.${CMAKE_MATCH_1}")
    if("${suite}.*" IN_LIST long_tests)
      continue()
    elseif(case IN_LIST long_tests)
      list(APPEND "excluded.${suite}" "${case}")
    elseif(NOT suite IN_LIST suites)
      list(APPEND suites "${suite}")
    endif()
  endif()
endforeach()
if(cases EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} listed no test cases:\n${listing}")
endif()

set(script "# Written by tests/add_suites.cmake from ${TEST_EXECUTABLE}: ${cases} test cases.\n")
foreach(suite IN LISTS suites)
  set(filter "${suite}.*")
  if(DEFINED "excluded.${suite}")
    string(REPLACE ";" ":" excluded "${excluded.${suite}}")
    set(filter "${filter}:-${excluded}")
  endif()
  string(APPEND script
    "add_test([=[${suite}]=] [=[${TEST_EXECUTABLE}]=] [=[--gtest_filter=${filter}]=])\n"
    "set_tests_properties([=[${suite}]=] PROPERTIES TIMEOUT ${TIMEOUT})\n")
endforeach()
file(WRITE "${OUTPUT}" "${script}")

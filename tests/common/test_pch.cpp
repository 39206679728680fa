// The source the shared precompiled <gtest/gtest.h> is built with
// (tests/CMakeLists.txt, peregrine_test_pch); it defines nothing.

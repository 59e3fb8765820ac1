// doctest's main(), compiled once into speclab_doctest_main.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

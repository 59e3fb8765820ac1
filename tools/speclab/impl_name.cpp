// Compiled into each speclab-<impl> binary with SPECLAB_LAB_IMPL set to its implementation.
#include "factory.h"

#ifndef SPECLAB_LAB_IMPL
#error "SPECLAB_LAB_IMPL must name the lab implementation this binary links (solution|starter)"
#endif

const char* speclab::cli::lab_impl() { return SPECLAB_LAB_IMPL; }

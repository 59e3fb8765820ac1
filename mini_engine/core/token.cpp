#include "mini_engine/core/token.h"

namespace speclab {

void todo(std::string_view lab, std::string_view what, std::string_view where) {
  throw TodoError("TODO(" + std::string(lab) + "): implement " + std::string(what) + " -- see " +
                  std::string(where));
}

}  // namespace speclab

// The op table's core group (see op_table.h).
#include "op_table.h"

namespace optable {

std::vector<OpInfo> core_ops() { return {}; }

}  // namespace optable

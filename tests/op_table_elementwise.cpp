// The op table's elementwise group (see op_table.h).
#include "op_table.h"

namespace optable {

std::vector<OpInfo> elementwise_ops() { return {}; }

}  // namespace optable

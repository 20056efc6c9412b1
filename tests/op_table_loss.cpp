// The op table's loss group (see op_table.h).
#include "op_table.h"

namespace optable {

std::vector<OpInfo> loss_ops() { return {}; }

}  // namespace optable

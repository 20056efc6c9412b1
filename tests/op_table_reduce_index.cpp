// The op table's reduce_index group (see op_table.h).
#include "op_table.h"

namespace optable {

std::vector<OpInfo> reduce_index_ops() { return {}; }

}  // namespace optable

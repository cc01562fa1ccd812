// Compiled by the wire_struct_mismatch_* tests, which expect check_fields to refuse it with
// its message: a component that does not carry its FlatBuffers struct's fields.
#include "ecsnet/protocol/wire_struct.hpp"
#include "demo_generated.h"  // games/demo/demo.fbs

namespace {

#if defined(ECSNET_MISMATCH_TYPE)
struct Position {
    double x{};  // the schema says float
    float y{};
};
#elif defined(ECSNET_MISMATCH_COUNT)
struct Position {
    float x{};
};
#else
struct Position {
    float x{};
    float y{};
};
#endif

static_assert(ecsnet::protocol::check_fields<Position, ecsnet::demo::wire::Position>());

}  // namespace

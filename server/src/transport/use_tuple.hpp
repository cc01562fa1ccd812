#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace ecsnet::server::detail {

// The completion token of every awaited socket operation in the server: the error comes back
// as a value, because a peer that closes or times out is an outcome to handle, not an exception.
inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace ecsnet::server::detail

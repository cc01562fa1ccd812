// Asio's and Beast's non-template code, compiled once for the whole project.
//
// Header-only, Asio and Beast compile their schedulers, reactors, socket operations, TLS glue
// and HTTP/WebSocket helpers in every translation unit that includes them; with
// BOOST_ASIO_SEPARATE_COMPILATION and BOOST_BEAST_SEPARATE_COMPILATION (set on every target
// that links ecsnet::asio) they are compiled here only. In CI this took about a quarter off the
// compile of each file that uses them (docs/BENCHMARKS.md, "CI time").
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>

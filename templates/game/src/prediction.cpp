// The player's prediction for the page (docs/PREDICTION.md in ecsnet-dev, "In the browser"): the
// server's own systems, compiled to WebAssembly with -D__NAME___WASM=ON into
// build/web/__NAME___prediction.js and .wasm, which the TypeScript SDK's Prediction runs.
#include <string_view>

#include "__NAME__/systems.hpp"
#include "ecsnet/client/prediction.hpp"
#include "ecsnet/client/prediction_module.h"

void ecsnet::client::declare_prediction(prediction& p, std::string_view /*config*/) {
    p.predict_smoothed<__NAME__::Position>().predict<__NAME__::Velocity>().input<__NAME__::Move>();
    __NAME__::add_systems(p.systems());
}

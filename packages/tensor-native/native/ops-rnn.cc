// Recurrent layers (fused multi-layer GRU / LSTM, single cells) and scaled dot-product attention.
#include <ATen/ATen.h>

#include "call.h"

namespace flodl {

void registerRnnOps(Registry& r) { (void)r; }

}  // namespace flodl

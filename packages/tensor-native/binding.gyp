{
  "targets": [
    {
      "target_name": "flodl_tensor_native",
      "sources": [
        "native/addon.cc",
        "native/addon-state.cc",
        "native/call.cc",
        "native/convert.cc",
        "native/ops-runtime.cc",
        "native/ops-creation.cc",
        "native/ops-elementwise.cc",
        "native/ops-reduction.cc",
        "native/ops-shape.cc",
        "native/ops-linalg.cc",
        "native/ops-inplace.cc",
        "native/ops-autograd.cc",
        "native/ops-nn.cc",
        "native/maxpool-cpu.cc",
        "native/gemm-cpu.cc",
        "native/matmul-cpu.cc",
        "native/ops-loss.cc",
        "native/ops-rnn.cc",
        "native/ops-optim.cc",
        "native/adam-cpu.cc",
        "native/ops-averaging.cc",
        "native/ops-cuda.cc",
        "native/ops-distributed.cc"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<!@(node scripts/libtorch.mjs --gyp includes)"
      ],
      "defines": [
        "NAPI_VERSION=8",
        "NAPI_CPP_EXCEPTIONS",
        "<!@(node scripts/libtorch.mjs --gyp defines)"
      ],
      "cflags!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti", "-std=gnu++17", "-std=gnu++1y"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-frtti", "-O2", "-Wno-unused-parameter", "-Wno-deprecated-declarations"],
      "ldflags": ["<!@(node scripts/libtorch.mjs --gyp ldflags)"]
    }
  ]
}

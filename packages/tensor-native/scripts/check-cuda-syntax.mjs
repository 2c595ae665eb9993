#!/usr/bin/env node
// `pnpm check:cuda-syntax`: compiles every native file with FLODL_CUDA defined, syntax only,
// against this machine's libtorch headers, on a machine without CUDA: the CUDA runtime's
// types and functions come from minimal declarations written to a temporary folder. It catches
// typos and API misuse in the CUDA-only code paths where no GPU (and no CUDA toolkit) is at
// hand; it does not replace building and running on a GPU (`gpu-run.sh`), and a libtorch older
// than the GPU machine's checks that version's branches only.
//
//   node scripts/check-cuda-syntax.mjs [native/ops-cuda.cc ...]
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findLibtorch } from './libtorch.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

// The CUDA runtime as far as libtorch's CUDA headers and the addon use it.
const RUNTIME = `#pragma once
#include <cstddef>
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;
typedef enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorNotReady = 600 } cudaError_t;
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1, cudaStreamCaptureModeRelaxed = 2 };
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1, cudaStreamCaptureStatusInvalidated = 2 };
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
#define CUDART_VERSION 12000
#define CUDA_VERSION 12000
struct cudaIpcEventHandle_t { char reserved[64]; };
struct cudaDeviceProp { char name[256]; size_t totalGlobalMem; int major; int minor; int multiProcessorCount; };
typedef int cublasStatus_t;
typedef int cusparseStatus_t;
typedef int cusolverStatus_t;
typedef struct cusparseContext* cusparseHandle_t;
typedef struct cublasContext* cublasHandle_t;
typedef struct cublasLtContext* cublasLtHandle_t;
typedef struct cusolverDnContext* cusolverDnHandle_t;
extern "C" {
const char* cudaGetErrorString(cudaError_t);
const char* cudaGetErrorName(cudaError_t);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
cudaError_t cudaGetDevice(int*);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDeviceCount(int*);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp*, int);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceGetStreamPriorityRange(int*, int*);
cudaError_t cudaStreamQuery(cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaStreamGetPriority(cudaStream_t, int*);
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned);
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus*);
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t, cudaStreamCaptureStatus*, unsigned long long*);
cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode*);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t*, unsigned);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t);
cudaError_t cudaEventQuery(cudaEvent_t);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float*, cudaEvent_t, cudaEvent_t);
cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t*, cudaEvent_t);
cudaError_t cudaIpcOpenEventHandle(cudaEvent_t*, cudaIpcEventHandle_t);
cudaError_t cudaMemcpy(void*, const void*, size_t, cudaMemcpyKind);
cudaError_t cudaMemcpyAsync(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
cudaError_t cudaMemGetInfo(size_t*, size_t*);
}
`;
const INCLUDE_RUNTIME = '#pragma once\n#include <cuda_runtime_api.h>\n';
const EMPTY = [
  'cuda_fp16.h',
  'cuda_bf16.h',
  'cublas_v2.h',
  'cublasLt.h',
  'cusparse.h',
  'cusolverDn.h',
  'cusolver_common.h',
  'driver_types.h',
  'library_types.h',
  'curand_kernel.h',
  'c10/cuda/impl/cuda_cmake_macros.h',
];

function writeStubs(dir) {
  writeFileSync(join(dir, 'cuda_runtime_api.h'), RUNTIME);
  for (const name of ['cuda_runtime.h', 'cuda.h']) writeFileSync(join(dir, name), INCLUDE_RUNTIME);
  for (const name of EMPTY) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), '#pragma once\n');
  }
}

function compile(file, flags) {
  return new Promise((resolve) => {
    const child = spawn('g++', [...flags, file], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
    let errors = '';
    child.stderr.on('data', (chunk) => {
      errors += chunk;
    });
    child.on('close', (code) => resolve({ file, ok: code === 0, errors }));
    child.on('error', (error) => resolve({ file, ok: false, errors: String(error) }));
  });
}

const config = findLibtorch();
const stubs = mkdtempSync(join(tmpdir(), 'flodl-cuda-stubs-'));
try {
  writeStubs(stubs);
  const flags = [
    '-std=c++17',
    '-fsyntax-only',
    '-DFLODL_CUDA',
    '-DNAPI_VERSION=8',
    '-DNAPI_CPP_EXCEPTIONS',
    ...config.defines.map((define) => `-D${define}`),
    `-I${stubs}`,
    `-I${require('node-addon-api').include_dir}`,
    `-I${join(dirname(process.execPath), '..', 'include', 'node')}`,
    ...config.includes.map((dir) => `-I${dir}`),
  ];
  const asked = process.argv.slice(2);
  const files =
    asked.length > 0
      ? asked
      : readdirSync(join(root, 'native'))
          .filter((name) => name.endsWith('.cc'))
          .map((name) => `native/${name}`);
  console.log(
    `check:cuda-syntax: ${files.length} files with FLODL_CUDA against torch ${config.version} headers (${config.root})`,
  );
  const results = [];
  const queue = [...files];
  const workers = Array.from({ length: Math.min(availableParallelism(), 4) }, async () => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      const result = await compile(file, flags);
      console.log(`  ${result.ok ? 'ok  ' : 'FAIL'} ${file}`);
      if (!result.ok) process.stderr.write(result.errors);
      results.push(result);
    }
  });
  await Promise.all(workers);
  const failed = results.filter((result) => !result.ok).length;
  console.log(`check:cuda-syntax: ${results.length - failed} compiled, ${failed} failed`);
  process.exitCode = failed === 0 ? 0 : 1;
} finally {
  rmSync(stubs, { recursive: true, force: true });
}

import { describe, expect, it } from "vitest";
import { findFatalLine } from "../../src/engine/fatal-lines.ts";

// Journal text as the simulated engine and its unit supervisor write it (captured with
// `journalctl -u <unit> -o cat`); paths shortened.
const SRC = "/opt/sglang/python/sglang";

const STARTUP = [
  "Started sglang-qwen.service - SGLang qwen.",
  "[2026-11-29 23:33:40] server_args=ServerArgs(model_path='/models/nvidia--Qwen3.5-397B-A17B-NVFP4', tokenizer_mode='auto', tp_size=8)",
  "[2026-11-29 23:33:40] Attention backend not specified. Use flashinfer backend by default.",
  "[2026-11-29 23:33:40 TP0] MOE_RUNNER_BACKEND is not initialized, the backend will be automatically selected",
  "[2026-11-29 23:33:40 TP0] Init torch distributed begin.",
  "[2026-11-29 23:33:40 TP0] Init torch distributed ends. mem usage=0.57 GB",
  "[2026-11-29 23:33:40 TP0] Load weight begin. avail mem=94.67 GB",
];

const SCHEDULER_FRAMES = [
  `  File "${SRC}/srt/managers/scheduler.py", line 2968, in run_scheduler_process`,
  "    scheduler = Scheduler(",
  `  File "${SRC}/srt/model_executor/model_runner.py", line 372, in initialize`,
  "    self.load_model()",
  `  File "${SRC}/srt/model_loader/loader.py", line 219, in _get_quantization_config`,
  "    raise ValueError(",
];

const HEALTHY = [
  ...STARTUP,
  "Loading safetensors checkpoint shards: 100% Completed | 19/19 [00:01<00:00, 12.61it/s]",
  "[2026-11-29 23:33:42 TP0] Load weight end. elapsed=1.50 s, type=Qwen3MoeForCausalLM, quant=modelopt_fp4, quant_algo=NVFP4, dtype=torch.bfloat16, avail mem=78.78 GB, mem usage=15.89 GB.",
  "[2026-11-29 23:33:42 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 2815549, K size: 32.22 GB, V size: 32.22 GB",
  "[2026-11-29 23:33:42] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
  '[2026-11-29 23:33:42] INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK',
  "[2026-11-29 23:33:42] The server is fired up and ready to roll!",
  "[2026-11-29 23:33:43 TP0] Decode batch. #running-req: 1, #token: 256, token usage: 0.00, cuda graph: True, gen throughput (token/s): 97.00, #queue-req: 0, ",
];

describe("findFatalLine", () => {
  it("finds nothing in a healthy start-up", () => {
    expect(findFatalLine(HEALTHY)).toBeUndefined();
    expect(findFatalLine([])).toBeUndefined();
  });

  it("reports a scheduler traceback by its exception line", () => {
    const journal = [
      ...STARTUP,
      "[2026-11-29 23:33:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
      ...SCHEDULER_FRAMES,
      "ValueError: The quantization method modelopt_fp4 is not supported for the current GPU. Minimum capability: 100. Current capability: 90.",
      "",
      "[2026-11-29 23:33:40] Received sigquit from a child process. It usually means the child failed.",
      "sglang-qwen.service: Main process exited, code=exited, status=1/FAILURE",
      "sglang-qwen.service: Failed with result 'exit-code'.",
    ];
    expect(findFatalLine(journal)).toEqual({
      kind: "traceback",
      line: "ValueError: The quantization method modelopt_fp4 is not supported for the current GPU. Minimum capability: 100. Current capability: 90.",
    });
  });

  it("classifies CUDA out of memory inside a traceback as oom", () => {
    const oom =
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.98 GiB. GPU 0 has a total capacity of 139.80 GiB of which 0.30 GiB is free.";
    const journal = [
      ...STARTUP,
      "Loading safetensors checkpoint shards:   0% Completed | 0/3 [00:00<?, ?it/s]",
      "[2026-11-29 23:33:35 TP0] Scheduler hit an exception: Traceback (most recent call last):",
      ...SCHEDULER_FRAMES.slice(0, 4),
      "    return func(*args, **kwargs)",
      oom,
      "[2026-11-29 23:33:35] Received sigquit from a child process. It usually means the child failed.",
      "oom.service: Main process exited, code=exited, status=1/FAILURE",
      "oom.service: Failed with result 'exit-code'.",
    ];
    expect(findFatalLine(journal)).toEqual({ kind: "oom", line: oom });
  });

  it("treats no room for the KV cache as oom, and ignores the indented raise", () => {
    const line = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.";
    const journal = [
      ...STARTUP,
      "[2026-11-29 23:33:41 TP0] Scheduler hit an exception: Traceback (most recent call last):",
      `  File "${SRC}/srt/model_executor/model_runner.py", line 1688, in init_memory_pool`,
      "    raise RuntimeError(",
      line,
    ];
    expect(findFatalLine(journal)).toEqual({ kind: "oom", line });
    // The same line without its traceback (journal excerpt cut above it).
    expect(findFatalLine([line])).toEqual({ kind: "oom", line });
  });

  it("reports a top-level RuntimeError that has no traceback in the excerpt", () => {
    const line = "RuntimeError: NCCL error: unhandled system error";
    expect(findFatalLine([...STARTUP, line])).toEqual({ kind: "other", line });
    expect(findFatalLine([...STARTUP, "    raise RuntimeError(msg)"])).toBeUndefined();
  });

  it("reports a broken engine build (main-process traceback on stderr)", () => {
    const journal = [
      "Started crash.service - SGLang crash.",
      "Traceback (most recent call last):",
      '  File "<frozen runpy>", line 189, in _run_module_as_main',
      `  File "${SRC}/__init__.py", line 4, in <module>`,
      "    from sglang.srt.entrypoints.engine import Engine",
      "    raise ImportError(error_msg)",
      "ImportError: /venv/sgl_kernel/sm100/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEab",
      "crash.service: Main process exited, code=exited, status=1/FAILURE",
      "crash.service: Failed with result 'exit-code'.",
    ];
    expect(findFatalLine(journal)).toEqual({
      kind: "traceback",
      line: "ImportError: /venv/sgl_kernel/sm100/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEab",
    });
  });

  it("follows chained exceptions to the one finally raised", () => {
    const journal = [
      "Traceback (most recent call last):",
      '  File "x.py", line 1, in <module>',
      "KeyError: 'model_type'",
      "",
      "During handling of the above exception, another exception occurred:",
      "",
      "Traceback (most recent call last):",
      '  File "x.py", line 3, in <module>',
      "ValueError: The checkpoint you are trying to load has model type `qwen3_5_moe` but Transformers does not recognize this architecture.",
    ];
    expect(findFatalLine(journal)?.line).toMatch(/^ValueError: The checkpoint/);
  });

  it("keeps the Traceback line when the excerpt ends before the exception", () => {
    const journal = [...STARTUP, "Traceback (most recent call last):", '  File "x.py", line 1, in <module>'];
    expect(findFatalLine(journal)).toEqual({
      kind: "traceback",
      line: "Traceback (most recent call last):",
      unended: true,
    });
  });

  it("detects NaN logits while serving", () => {
    const line = "[2026-11-29 23:40:01 TP0] Detected errors during sampling! NaN in the logits.";
    expect(findFatalLine([...HEALTHY, line])).toEqual({ kind: "sampling", line });
  });

  it("detects argparse refusing the command line (and not the usage text)", () => {
    const journal = [
      "Started argp.service - SGLang argp.",
      "usage: launch_server.py [-h] --model-path MODEL_PATH",
      "                        [--tokenizer-path TOKENIZER_PATH]",
      "                        [--fp4-gemm-backend {auto,flashinfer_cudnn,flashinfer_cutedsl,flashinfer_cutlass,flashinfer_trtllm,marlin}]",
      "launch_server.py: error: unrecognized arguments: --fp4-gemm-backend flashinfer_cudnn",
      "argp.service: Main process exited, code=exited, status=2/INVALIDARGUMENT",
      "argp.service: Failed with result 'exit-code'.",
    ];
    expect(findFatalLine(journal)).toEqual({
      kind: "other",
      line: "launch_server.py: error: unrecognized arguments: --fp4-gemm-backend flashinfer_cudnn",
    });
  });

  it("detects systemd failing to execute the ExecStart binary", () => {
    const journal = [
      "noexec.service: Unable to locate executable '/opt/nope/bin/python': No such file or directory",
      "noexec.service: Failed at step EXEC spawning /opt/nope/bin/python: No such file or directory",
      "Started noexec.service - SGLang noexec.",
      "noexec.service: Main process exited, code=exited, status=203/EXEC",
      "noexec.service: Failed with result 'exit-code'.",
    ];
    expect(findFatalLine(journal)).toEqual({
      kind: "exec",
      line: "noexec.service: Unable to locate executable '/opt/nope/bin/python': No such file or directory",
    });
    expect(findFatalLine(journal.slice(3))).toEqual({
      kind: "exec",
      line: "noexec.service: Main process exited, code=exited, status=203/EXEC",
    });
  });

  it("falls back to systemd's Failed with result when nothing explains the failure", () => {
    const journal = [
      ...STARTUP,
      "sglang-qwen.service: Main process exited, code=killed, status=9/KILL",
      "sglang-qwen.service: Failed with result 'signal'.",
    ];
    expect(findFatalLine(journal)).toEqual({
      kind: "other",
      line: "sglang-qwen.service: Failed with result 'signal'.",
    });
  });

  it("reads journalctl's short format too, reporting the message without the prefix", () => {
    const journal = [
      "Nov 29 23:33:40 gpu-1 systemd[1]: Started sglang-qwen.service - SGLang qwen.",
      "Nov 29 23:33:41 gpu-1 python[4242]: [2026-11-29 23:33:41 TP0] Scheduler hit an exception: Traceback (most recent call last):",
      'Nov 29 23:33:41 gpu-1 python[4242]:   File "scheduler.py", line 2968, in run_scheduler_process',
      "Nov 29 23:33:41 gpu-1 python[4242]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB.",
    ];
    expect(findFatalLine(journal)).toEqual({
      kind: "oom",
      line: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB.",
    });
  });

  it("among equally telling lines the earliest wins; systemd's own line never beats a cause", () => {
    const journal = [
      ...HEALTHY,
      "[2026-11-29 23:40:01 TP0] Detected errors during sampling! NaN in the logits.",
      "[2026-11-29 23:40:02 TP0] Scheduler hit an exception: Traceback (most recent call last):",
      "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
      "sglang-qwen.service: Failed with result 'exit-code'.",
    ];
    // The sampling warning came first and is as telling as the crash that followed it.
    expect(findFatalLine(journal)?.kind).toBe("sampling");
    expect(findFatalLine(journal.filter((l) => !l.includes("sampling")))).toEqual({
      kind: "traceback",
      line: "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    });
  });
});

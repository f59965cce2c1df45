import java.util.Locale;

/**
 * A real NCCL client in a JVM for scripts/gpu/85-torch.sh (part "torch" of scripts/gpu-check.sh):
 * PyTorch's ProcessGroupNCCL driven from Java through an embedded CPython (torch_jni.c), on the
 * calling Java thread, so that the agent's native part sees libtorch's NCCL and CUDA calls with the
 * Java frames that entered the JNI library ({@code TorchClient.runPython(Native Method)}).
 *
 * <pre>
 * java -Djava.library.path=DIR TorchClient MODE --libpython PATH [--site DIR] [--small N] [--large N] [--repeats N]
 * </pre>
 * MODE: {@code probe} (Python without torch, from the main thread and from a second Java thread),
 * {@code bench} (timed loops of all-reduces of 1 KiB and 4 MiB, then destroy_process_group()),
 * {@code leaky} (returns without destroy_process_group()), {@code clean} (destroys it); CuPy's NCCL
 * binding ({@code cupy-leaky}, {@code cupy-clean}: CuPy loads no libcudart, its stream and event
 * calls reach libcuda.so.1 through its static runtime). Every torch
 * mode makes the default group (ncclCommInitRankConfig, eager through device_id) and a sub-group
 * new_group([0]) (ncclCommSplit), and all-reduces on both. PYTHONHOME must name the prefix of the
 * libpython (e.g. /usr); --site adds a venv's site-packages to sys.path (site.addsitedir).
 * Lines for the script: {@code TORCHCLIENT ...} and, for bench, {@code TORCHBENCH size=1KiB bytes=1024
 * ops=3000 cpu_us_per_op=8.765 us_per_op=12.345 repeats=...} (cpu: the launching thread's CPU time up to
 * the last launch, wall: up to the synchronize after it; medians of the repeats), and where
 * TORCHCLIENT_PROF_LIB names the counting build of the native part that the JVM loaded, {@code TORCHAB
 * size=1KiB ... forwarded_us= tracked_us= ratio=} from loops alternated in this one process
 * (TORCHCLIENT_AB_ROUNDS pairs). TORCHCLIENT_LAUNCH_CPU=N runs the bench's launching thread alone on CPU N
 * and the process's other threads off N's core. Exit
 * status 0, or 1 when the Python code raised (traceback on stderr).
 * No package: compiled by scripts/gpu-prepare.sh into .gpu/torch.
 */
public final class TorchClient {
    private TorchClient() {
    }

    /** torch_jni.c: loads libpython RTLD_GLOBAL, initialises it once, runs code as __main__. */
    private static native int runPython(String libpython, String code);

    private static final String TORCH = """
            import os, socket, sys, threading, time
            if SITE:
                import site
                site.addsitedir(SITE)
            def _free_port():
                with socket.socket() as s:
                    s.bind(('127.0.0.1', 0))
                    return s.getsockname()[1]
            os.environ.setdefault('MASTER_ADDR', '127.0.0.1')
            os.environ.setdefault('MASTER_PORT', str(_free_port()))
            os.environ['RANK'] = '0'
            os.environ['WORLD_SIZE'] = '1'
            os.environ.setdefault('LOCAL_RANK', '0')
            import torch
            import torch.distributed as dist
            print('TORCHCLIENT torch=%s cuda=%s nccl=%s python=%s thread=%s' % (torch.__version__, torch.version.cuda,
                  '.'.join(map(str, torch.cuda.nccl.version())), sys.version.split()[0], threading.current_thread().name), flush=True)
            dev = torch.device('cuda:0')
            torch.cuda.set_device(dev)
            # device_id: the default group's communicator made now (ncclCommInitRankConfig), and new_group split from it
            dist.init_process_group('nccl', rank=0, world_size=1, device_id=dev)
            sub = dist.new_group([0])
            small = torch.ones(256, dtype=torch.float32, device=dev)
            large = torch.ones(1 << 20, dtype=torch.float32, device=dev)
            dist.all_reduce(small)
            dist.all_reduce(small, group=sub)
            dist.all_reduce(large)
            torch.cuda.synchronize()
            assert small[0].item() == 1.0 and large[-1].item() == 1.0, 'one-rank all-reduce changed the data'
            print('TORCHCLIENT groups ready: default and new_group([0]), all-reduces checked', flush=True)
            with open('/proc/self/maps') as f:
                libs = sorted(set(l.split()[-1] for l in f if '/' in l
                                  and os.path.basename(l.split()[-1]).startswith(('libnccl.so', 'libcudart.so'))))
            print('TORCHCLIENT libraries: %s' % ' '.join(libs), flush=True)
            if MODE == 'bench':
                SIZES = (('1KiB', small, SMALL), ('4MiB', large, LARGE))
                med = lambda v: sorted(v)[len(v) // 2]
                # TORCHCLIENT_LAUNCH_CPU: this (launching) thread alone on that CPU, every other thread of
                # the process (the JVM's, PyTorch's watchdog, NCCL's) on the allowed CPUs but it and its
                # SMT siblings, so that no other thread shares its core (rounds otherwise differ by 1.5x)
                launch_cpu = os.environ.get('TORCHCLIENT_LAUNCH_CPU')
                if launch_cpu:
                    def cpus(text):
                        out = set()
                        for part in text.strip().split(','):
                            lo, _, hi = part.partition('-')
                            out.update(range(int(lo), int(hi or lo) + 1))
                        return out
                    cpu = int(launch_cpu)
                    allowed = os.sched_getaffinity(0)
                    if cpu not in allowed:
                        raise RuntimeError('TORCHCLIENT_LAUNCH_CPU=%d is not among the CPUs this process may run on (%s): '
                                         'name one of them' % (cpu, sorted(allowed)))
                    try:
                        with open('/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list' % cpu) as f:
                            core = cpus(f.read()) | {cpu}
                    except OSError:
                        core = {cpu}
                    others = (allowed - core) or (allowed - {cpu})
                    me, moved = threading.get_native_id(), 0
                    for tid in map(int, os.listdir('/proc/self/task')):
                        if tid != me and others:
                            try:
                                os.sched_setaffinity(tid, others)
                                moved += 1
                            except OSError:
                                pass
                    os.sched_setaffinity(0, {cpu})
                    print('TORCHCLIENT launching thread alone on CPU %d (its core: %s); %d other threads on %s'
                          % (cpu, sorted(core), moved, sorted(others)), flush=True)
                # n all-reduces from an idle GPU: wall us/op up to the synchronize after the last, and the
                # launching thread's CPU us/op up to the last launch (what the calls cost it)
                def loop(t, n):
                    torch.cuda.synchronize()
                    t0 = time.perf_counter_ns()
                    c0 = time.thread_time_ns()
                    for _ in range(n):
                        dist.all_reduce(t)
                    cpu = (time.thread_time_ns() - c0) / n / 1000.0
                    torch.cuda.synchronize()
                    return (time.perf_counter_ns() - t0) / n / 1000.0, cpu
                for name, t, n in SIZES:
                    for _ in range(max(n // 10, 10)):
                        dist.all_reduce(t)
                    runs = [loop(t, n) for _ in range(REPEATS)]
                    all_us = sorted(w for w, _ in runs)
                    print('TORCHBENCH size=%s bytes=%d ops=%d cpu_us_per_op=%.3f us_per_op=%.3f repeats=%s' % (name, t.numel() * 4, n,
                          med([c for _, c in runs]), med(all_us), ','.join('%.3f' % v for v in all_us)), flush=True)
                # in-process rounds (the counting build of the native part, loaded from TORCHCLIENT_PROF_LIB):
                # loops with every wrapper forwarding at once (ncclguard_prof_forward(1)) and loops
                # tracked, alternated in one process, so that no JVM-to-JVM spread enters their ratio
                ab = os.environ.get('TORCHCLIENT_PROF_LIB')
                if ab:
                    import ctypes
                    with open('/proc/self/maps') as f:
                        loaded = any(l.rstrip().endswith(os.path.realpath(ab)) for l in f)
                    if not loaded:
                        print('TORCHAB unavailable: %s is not the native part this process loaded' % ab, flush=True)
                    else:
                        forward = ctypes.CDLL(ab).ncclguard_prof_forward
                        forward.argtypes = [ctypes.c_int]
                        # TORCHCLIENT_AB_ROUNDS pairs (default 2 x REPEATS), each a forwarding and a tracked
                        # loop back to back, their order turning every pair, each loop n / TORCHCLIENT_AB_DIV
                        # all-reduces (default 1: as the timed loops); the median of the pairs' ratios, its
                        # quartiles and a 95 % interval (2,000 resamples of the pairs), the launching thread's
                        # CPU added (median of the pairs' differences)
                        rounds = int(os.environ.get('TORCHCLIENT_AB_ROUNDS') or 2 * REPEATS)
                        div = max(1, int(os.environ.get('TORCHCLIENT_AB_DIV') or 1))
                        q = lambda v, f: sorted(v)[min(len(v) - 1, int(f * len(v)))]
                        import random
                        rng = random.Random(28)
                        for name, t, n in SIZES:
                            n = max(1, n // div)
                            runs = {0: [], 1: []}
                            for r in range(rounds):
                                for phase in ((1, 0) if r % 2 == 0 else (0, 1)):
                                    forward(phase)
                                    runs[phase].append(loop(t, n))
                            forward(0)
                            ratios = [b[0] / a[0] for a, b in zip(runs[1], runs[0])]
                            added = [b[1] - a[1] for a, b in zip(runs[1], runs[0])]
                            boot = sorted(med([rng.choice(ratios) for _ in ratios]) for _ in range(2000))
                            print('TORCHAB size=%s ops=%d rounds=%d forwarded_us=%.3f tracked_us=%.3f ratio=%.4f '
                                  'ratio_ci95=%.4f-%.4f ratio_q1=%.4f ratio_q3=%.4f cpu_forwarded_us=%.3f '
                                  'cpu_tracked_us=%.3f cpu_added_us=%.3f ratios=%s' % (name, n, rounds,
                                  med([w for w, _ in runs[1]]), med([w for w, _ in runs[0]]), med(ratios),
                                  boot[50], boot[1949], q(ratios, 0.25), q(ratios, 0.75), med([c for _, c in runs[1]]),
                                  med([c for _, c in runs[0]]), med(added),
                                  ','.join('%.3f' % x for x in ratios)), flush=True)
            if MODE in ('bench', 'clean'):
                dist.destroy_process_group()
                print('TORCHCLIENT destroy_process_group() returned', flush=True)
            # the threads alive as the Java method returns (ProcessGroupNCCL's watchdog among them while a group lives)
            names = []
            for task in sorted(os.listdir('/proc/self/task')):
                try:
                    with open('/proc/self/task/%s/comm' % task) as f:
                        names.append(f.read().strip())
                except OSError:
                    pass
            names = sorted(set(n for n in names if n.startswith('pt_') or ('nccl' in n.lower() and 'ncclguard' not in n)))
            print('TORCHCLIENT threads at return: %s' % ' '.join(names), flush=True)
            print('TORCHCLIENT done mode=%s' % MODE, flush=True)
            """;

    /**
     * CuPy: a communicator (ncclCommInitRank), an all-reduce on a stream of CuPy's, an event recorded
     * on it, the stream synchronized; clean: the event waited for, the communicator destroyed, the
     * stream and event dropped (CuPy destroys them); leaky: a second all-reduce and event recorded
     * and never waited for, everything kept alive to the exit.
     */
    private static final String CUPY = """
            import builtins, gc, os, sys
            if SITE:
                import site
                site.addsitedir(SITE)
            import cupy as cp
            from cupy.cuda import nccl
            cp.cuda.Device(0).use()
            comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
            stream = cp.cuda.Stream(non_blocking=True)
            x = cp.ones(256, dtype=cp.float32)
            comm.allReduce(x.data.ptr, x.data.ptr, x.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.ptr)
            event = cp.cuda.Event(disable_timing=True)
            event.record(stream)
            stream.synchronize()
            assert float(x[0].get()) == 1.0, 'one-rank all-reduce changed the data'
            with open('/proc/self/maps') as f:
                libs = sorted(set(l.split()[-1] for l in f if '/' in l
                                  and os.path.basename(l.split()[-1]).startswith(('libnccl.so', 'libcudart.so', 'libcuda.so'))))
            print('CUPYCLIENT cupy=%s nccl=%s libraries: %s' % (cp.__version__, nccl.get_version(), ' '.join(libs)), flush=True)
            if MODE == 'cupy-clean':
                event.synchronize()
                comm.destroy()
                del event, stream
                gc.collect()
                print('CUPYCLIENT destroyed the communicator, dropped the stream and the event', flush=True)
            else:
                comm.allReduce(x.data.ptr, x.data.ptr, x.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.ptr)
                pending = cp.cuda.Event(disable_timing=True)
                pending.record(stream)
                builtins._cupy_client_kept = (comm, stream, event, pending, x)
                print('CUPYCLIENT left the communicator, the stream and a pending event', flush=True)
            print('CUPYCLIENT done mode=%s' % MODE, flush=True)
            """;

    private static final String PROBE = """
            import sys, threading
            print('TORCHCLIENT probe python=%s thread=%s prefix=%s sum=%d' % (sys.version.split()[0],
                  threading.current_thread().name, sys.prefix, sum(range(1001))), flush=True)
            """;

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage("no mode");
        }
        String mode = args[0];
        String libpython = null;
        String site = "";
        int small = 3000;
        int large = 500;
        int repeats = 3;
        for (int i = 1; i < args.length; i++) {
            if (i + 1 >= args.length) {
                usage("no value after " + args[i]);
            }
            switch (args[i]) {
                case "--libpython" -> libpython = args[++i];
                case "--site" -> site = args[++i];
                case "--small" -> small = Integer.parseInt(args[++i]);
                case "--large" -> large = Integer.parseInt(args[++i]);
                case "--repeats" -> repeats = Integer.parseInt(args[++i]);
                default -> usage("unknown option " + args[i]);
            }
        }
        if (libpython == null) {
            usage("no --libpython");
        }
        System.loadLibrary("torchclient");
        int rc;
        switch (mode) {
            case "probe" -> rc = probe(libpython);
            case "bench", "leaky", "clean" -> rc = torch(libpython, mode, site, small, large, repeats);
            case "cupy-leaky", "cupy-clean" -> rc = runPython(libpython,
                    String.format(Locale.ROOT, "MODE = %s\nSITE = %s\n", pyString(mode), pyString(site)) + CUPY);
            default -> {
                usage("unknown mode " + mode);
                return;
            }
        }
        System.out.println("TORCHCLIENT java: " + mode + (rc == 0 ? " ran to its end" : " FAILED: the Python code raised"));
        System.out.flush();
        if (rc != 0) {
            System.exit(1);
        }
    }

    /** Python without torch, from the main thread, from a second Java thread, then main again. */
    private static int probe(String libpython) throws InterruptedException {
        int[] rc = new int[3];
        rc[0] = runPython(libpython, PROBE);
        Thread other = new Thread(() -> rc[1] = runPython(libpython, PROBE), "torch-client-2");
        other.start();
        other.join();
        rc[2] = runPython(libpython, PROBE);
        return rc[0] | rc[1] | rc[2];
    }

    private static int torch(String libpython, String mode, String site, int small, int large, int repeats) {
        String header = String.format(Locale.ROOT, "MODE = %s\nSITE = %s\nSMALL = %d\nLARGE = %d\nREPEATS = %d\n",
                pyString(mode), pyString(site), small, large, repeats);
        return runPython(libpython, header + TORCH);
    }

    /** A Python string literal of s. */
    private static String pyString(String s) {
        StringBuilder b = new StringBuilder("'");
        for (char c : s.toCharArray()) {
            if (c == '\\' || c == '\'') {
                b.append('\\');
            }
            b.append(c);
        }
        return b.append('\'').toString();
    }

    private static void usage(String why) {
        System.err.println("TorchClient: " + why + "\nusage: java -Djava.library.path=DIR TorchClient probe|bench|leaky|clean|cupy-leaky|cupy-clean"
                + " --libpython PATH [--site DIR] [--small N] [--large N] [--repeats N]");
        System.exit(2);
    }
}

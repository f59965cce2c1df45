# The agent core over JNA interface mapping: clean, leaky, cleanup, destroy-in-hook, pending.
r=$reports
run clean "report=$r/clean.json" NCCL_DEBUG=WARN -- clean
run leaky "report=$r/leaky.json" NCCL_DEBUG=WARN -- leaky
run leaky-cleanup "action=cleanup,report=$r/leaky-cleanup.json" NCCL_DEBUG=WARN -- leaky
run destroy-in-hook "report=$r/destroy-in-hook.json" NCCL_DEBUG=WARN -- destroy-in-hook
run pending "report=$r/pending.json" NCCL_DEBUG=WARN -- pending --count 67108864 --iters 200

package dev.ncclguard.samples;

/** The command line: a scenario and its knobs. */
record Options(String scenario, int ranks, int iterations, int count, boolean initAll, boolean help, String bridge) {
    static final int DEFAULT_RANKS = 2;
    static final int DEFAULT_ITERATIONS = 5;
    static final int DEFAULT_COUNT = 1024;
    static final String DEFAULT_BRIDGE = "jna";

    /** The scenario and knobs with the default bridge, JNA interface mapping. */
    Options(String scenario, int ranks, int iterations, int count, boolean initAll, boolean help) {
        this(scenario, ranks, iterations, count, initAll, help, DEFAULT_BRIDGE);
    }

    /** Throws IllegalArgumentException with a one-line reason for a bad command line. */
    static Options parse(String[] args) {
        String scenario = null;
        int ranks = DEFAULT_RANKS;
        int iterations = DEFAULT_ITERATIONS;
        int count = DEFAULT_COUNT;
        boolean initAll = false;
        String bridge = DEFAULT_BRIDGE;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--help", "-h" -> {
                    return new Options(null, ranks, iterations, count, initAll, true);
                }
                case "--ranks" -> ranks = positive(arg, value(args, ++i, arg));
                case "--iters" -> iterations = positive(arg, value(args, ++i, arg));
                case "--count" -> count = positive(arg, value(args, ++i, arg));
                case "--bridge" -> {
                    bridge = value(args, ++i, arg);
                    if (!Bridges.NAMES.contains(bridge)) {
                        throw new IllegalArgumentException("--bridge " + bridge + ": expected one of "
                                + String.join(", ", Bridges.NAMES));
                    }
                }
                case "--init" -> {
                    String how = value(args, ++i, arg);
                    if (!how.equals("rank") && !how.equals("all")) {
                        throw new IllegalArgumentException("--init " + how + ": expected rank or all");
                    }
                    initAll = how.equals("all");
                }
                default -> {
                    if (arg.startsWith("-") || scenario != null) {
                        throw new IllegalArgumentException("unexpected argument '" + arg + "'");
                    }
                    if (!Scenarios.ALL.containsKey(arg) && !EpSample.SCENARIOS.containsKey(arg)) {
                        throw new IllegalArgumentException("unknown scenario '" + arg + "'");
                    }
                    scenario = arg;
                }
            }
        }
        if (scenario == null) {
            throw new IllegalArgumentException("no scenario given");
        }
        return new Options(scenario, ranks, iterations, count, initAll, false, bridge);
    }

    /** The value after an option; also used by MultiRank's own options. */
    static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }

    static int positive(String option, String value) {
        try {
            int n = Integer.parseInt(value);
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below, like any other bad value
        }
        throw new IllegalArgumentException(option + " " + value + ": expected a positive integer");
    }
}

package dev.ncclguard.weave;

/**
 * The arguments woven code hands the native-method hooks ({@code Hooks.nativeEnter} and the rest;
 * see {@link dev.ncclguard.bootstrap.state.NativeSink}), in slot order ({@code args}: Java argument
 * indexes), and how each goes ({@code kinds}: {@link #WORD}, {@link #REFERENCE} or
 * {@link #ADDRESS}). For a call tracked on its handles alone ({@code carried}), {@code handle} and
 * {@code stream} are the slots of its handle and stream (-1: none), and the woven code hands only
 * those to the carried-record hooks (Hooks.nativeFind, nativeToken, nativeExitFound).
 */
public record Slots(int[] args, int[] kinds, boolean carried, int handle, int stream) {
    /**
     * The slots a hook takes: the most distinct arguments one function reads
     * (ncclCommInitRankScalable: comm, nranks, rank, nId, ids).
     */
    public static final int COUNT = 5;
    /** How an argument goes into a slot: not at all, as a long, as is. */
    public static final int NOT_PASSED = 0;
    public static final int WORD = 1;
    public static final int REFERENCE = 2;
    /** A JNA Pointer passed by value: its address, read by the woven code (Pointer.nativeValue), as a long. */
    public static final int ADDRESS = 3;

    /** The install-time self-check's: no argument. */
    public static final Slots NONE = new Slots(new int[0], new int[0], false, -1, -1);
}

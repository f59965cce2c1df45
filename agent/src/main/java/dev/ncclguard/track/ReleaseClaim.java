package dev.ncclguard.track;

/**
 * The right to release one tracked handle at exit. Cleanup claims a handle before it releases it;
 * the claim fails when the application is releasing it (or has released it), and once it holds,
 * the application's own release of that handle never starts (the bridge parks the thread that
 * tries, which only happens while the JVM exits).
 */
public interface ReleaseClaim {
    /** For handles no tracker follows (views made by hand): every claim succeeds. */
    ReleaseClaim UNTRACKED = new ReleaseClaim() {
        @Override
        public boolean claimForCleanup() {
            return true;
        }

        @Override
        public boolean claimedForCleanup() {
            return false;
        }

        @Override
        public boolean applicationReleasing() {
            return false;
        }
    };

    /** Takes the handle for cleanup; false when the application released it or is releasing it. */
    boolean claimForCleanup();

    /** Whether cleanup holds the handle. */
    boolean claimedForCleanup();

    /**
     * Whether a release of the application's (a destroy, or an abort of it) has been entered and
     * has neither returned nor failed: the handle is still live inside the library.
     */
    boolean applicationReleasing();
}

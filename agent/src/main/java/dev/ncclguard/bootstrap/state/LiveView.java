package dev.ncclguard.bootstrap.state;

import java.util.Collection;
import java.util.List;

/** What the agent answers through {@link dev.ncclguard.bootstrap.Live}: the leaks of this moment, by the tracker's rules. */
public interface LiveView {
    /** An id for each current leak (suppressed ones left out), stable while the leak lasts. */
    List<String> leakIds();

    /** The leaks of {@code ids} that are still leaks, as the text report prints them; "" for none. */
    String describe(Collection<String> ids);
}

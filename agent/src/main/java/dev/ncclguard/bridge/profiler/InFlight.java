package dev.ncclguard.bridge.profiler;

import java.util.LinkedHashMap;
import java.util.Map;

/** The report's {@code details.inFlight} of a communicator, from what the plugin keeps per communicator. */
final class InFlight {
    private InFlight() {
    }

    /**
     * @param out   collectives, p2p, the oldest's kind (1 collective, 2 p2p), its count (elements), its
     *              age in ns, operations completed
     * @param names the oldest's function and datatype (NCCL's names), or null
     */
    static Map<String, Object> details(long[] out, String[] names) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("operations", out[0] + out[1]);
        d.put("collectives", out[0]);
        d.put("p2p", out[1]);
        Map<String, Object> oldest = new LinkedHashMap<>();
        oldest.put("kind", out[2] == 2 ? "p2p" : "collective");
        String function = names != null ? names[0] : null;
        String datatype = names != null && names.length > 1 ? names[1] : null;
        if (function != null) {
            oldest.put("function", function);
        }
        oldest.put("elements", out[3]);
        if (datatype != null) {
            oldest.put("datatype", datatype);
            int size = size(datatype);
            if (size > 0) {
                oldest.put("bytes", out[3] * size);
            }
        }
        oldest.put("ageMs", out[4] / 1_000_000);
        d.put("oldest", oldest);
        return d;
    }

    /** Bytes per element of NCCL's datatypes, by the names ncclDatatypeToString gives them; 0 if unknown. */
    static int size(String datatype) {
        switch (datatype) {
            case "ncclInt8": case "ncclChar": case "ncclUint8": case "ncclFloat8e4m3": case "ncclFloat8e5m2":
                return 1;
            case "ncclFloat16": case "ncclHalf": case "ncclBfloat16":
                return 2;
            case "ncclInt32": case "ncclInt": case "ncclUint32": case "ncclFloat32": case "ncclFloat":
                return 4;
            case "ncclInt64": case "ncclUint64": case "ncclFloat64": case "ncclDouble":
                return 8;
            default:
                return 0;
        }
    }
}

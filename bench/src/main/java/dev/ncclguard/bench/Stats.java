package dev.ncclguard.bench;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/** Min, median and max of a set of samples (forks, runs). */
public record Stats(double min, double median, double max, int n) {

    public static Stats of(List<Double> samples) {
        if (samples.isEmpty()) {
            return new Stats(Double.NaN, Double.NaN, Double.NaN, 0);
        }
        double[] s = samples.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(s);
        int n = s.length;
        double median = n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        return new Stats(s[0], median, s[n - 1], n);
    }

    /** "min / median / max" with the given number of decimals. */
    public String format(int decimals) {
        String f = "%." + decimals + "f";
        return String.format(Locale.ROOT, f + " / " + f + " / " + f, min, median, max);
    }
}

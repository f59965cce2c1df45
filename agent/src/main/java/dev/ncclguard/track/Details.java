package dev.ncclguard.track;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * The {@code details} of a leak: a small immutable map in report order. The tracker makes one per
 * leak at exit (100,000 at a time), so it is two arrays, the keys shared by every leak of a kind,
 * rather than a LinkedHashMap with an entry per field; writers read it by index.
 */
public final class Details extends AbstractMap<String, Object> {
    public static final Details EMPTY = new Details(new String[0], new Object[0]);

    private final String[] keys;
    private final Object[] values;

    private Details(String[] keys, Object[] values) {
        this.keys = keys;
        this.values = values;
    }

    /** {@code keys} is shared, never changed; {@code values} becomes this map's own. */
    static Details of(String[] keys, Object... values) {
        if (keys.length != values.length) {
            throw new IllegalArgumentException(keys.length + " keys, " + values.length + " values");
        }
        return new Details(keys, values);
    }

    /** The fields of {@code map} in its iteration order (a Details is returned as it is). */
    public static Details copyOf(Map<String, ?> map) {
        if (map instanceof Details d) {
            return d;
        }
        if (map == null || map.isEmpty()) {
            return EMPTY;
        }
        String[] keys = new String[map.size()];
        Object[] values = new Object[keys.length];
        int i = 0;
        for (Map.Entry<String, ?> field : map.entrySet()) {
            keys[i] = field.getKey();
            values[i++] = field.getValue();
        }
        return new Details(keys, values);
    }

    /**
     * These fields with {@code key} set to {@code value}: in its place if present, else last.
     * A null {@code value} removes the key.
     */
    public Details with(String key, Object value) {
        int at = indexOf(key);
        if (value == null) {
            if (at < 0) {
                return this;
            }
            String[] k = new String[keys.length - 1];
            Object[] v = new Object[k.length];
            System.arraycopy(keys, 0, k, 0, at);
            System.arraycopy(keys, at + 1, k, at, k.length - at);
            System.arraycopy(values, 0, v, 0, at);
            System.arraycopy(values, at + 1, v, at, v.length - at);
            return new Details(k, v);
        }
        if (at >= 0) {
            Object[] v = values.clone();
            v[at] = value;
            return new Details(keys, v);
        }
        String[] k = Arrays.copyOf(keys, keys.length + 1);
        k[keys.length] = key;
        Object[] v = Arrays.copyOf(values, values.length + 1);
        v[values.length] = value;
        return new Details(k, v);
    }

    @Override
    public int size() {
        return keys.length;
    }

    public String key(int i) {
        return keys[i];
    }

    public Object value(int i) {
        return values[i];
    }

    private int indexOf(Object key) {
        for (int i = 0; i < keys.length; i++) {
            if (keys[i].equals(key)) {
                return i;
            }
        }
        return -1;
    }

    /** The same fields in the same order (Map's equals ignores the order, which a writer keeps). */
    public boolean sameFields(Details other) {
        return Arrays.equals(keys, other.keys) && Arrays.equals(values, other.values);
    }

    @Override
    public boolean containsKey(Object key) {
        return indexOf(key) >= 0;
    }

    @Override
    public Object get(Object key) {
        int at = indexOf(key);
        return at < 0 ? null : values[at];
    }

    @Override
    public Set<Entry<String, Object>> entrySet() {
        return new AbstractSet<>() {
            @Override
            public Iterator<Entry<String, Object>> iterator() {
                return new Iterator<>() {
                    private int next;

                    @Override
                    public boolean hasNext() {
                        return next < keys.length;
                    }

                    @Override
                    public Entry<String, Object> next() {
                        if (next >= keys.length) {
                            throw new NoSuchElementException();
                        }
                        int i = next++;
                        return new SimpleImmutableEntry<>(keys[i], values[i]);
                    }
                };
            }

            @Override
            public int size() {
                return keys.length;
            }
        };
    }
}

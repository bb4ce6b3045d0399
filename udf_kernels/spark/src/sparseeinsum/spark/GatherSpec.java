package sparseeinsum.spark;

import org.apache.spark.unsafe.types.UTF8String;

/**
 * A gather spec of sparse_einsum/kernels/spec.py (se_gspec of se_kernel.c):
 * <pre>  SIZE;DN0,...;SN0,...;DS0,...;SS0,...[;FILL]</pre>
 * element e of the sub-tensor (row-major over DS) of position POS (row-major over DN)
 * sits at sum(unravel(POS, DN) * SN) + sum(unravel(e, DS) * SS) in the big tensor; FILL
 * (0 when omitted) is where nothing is stacked, and a split leaves out pieces all FILL.
 */
final class GatherSpec {
    final long size, positions;
    final double fill;         // the big tensor's default: where a stack writes nothing
    final long[] dn, sn;
    final int[] sub;           // flat offset of each element of a sub-tensor

    private static final ThreadLocal<Object[]> LAST = ThreadLocal.withInitial(() -> new Object[2]);

    static GatherSpec of(UTF8String text, String fn) {
        Object[] last = LAST.get();
        if (text.equals(last[0])) {
            return (GatherSpec) last[1];
        }
        GatherSpec g;
        try {
            g = new GatherSpec(text.toString());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                fn + ": invalid gather spec \"" + text + "\": " + e.getMessage());
        }
        last[0] = text.clone();
        last[1] = g;
        return g;
    }

    GatherSpec(String text) {
        String[] f = text.split(";", -1);
        if (f.length != 5 && f.length != 6) {
            throw new IllegalArgumentException("expected SIZE;NEW_DIMS;NEW_STRIDES;SUB_DIMS;SUB_STRIDES[;FILL]");
        }
        fill = f.length == 6 ? KernelSpec.number(f[5], "FILL") : 0.0;
        long[] s = KernelSpec.ints(f[0], "SIZE");
        if (s.length != 1) {
            throw new IllegalArgumentException("SIZE must be one integer");
        }
        size = s[0];
        dn = KernelSpec.ints(f[1], "NEW_DIMS");
        long[] ds = KernelSpec.ints(f[3], "SUB_DIMS");
        sn = KernelSpec.ints(f[2], "NEW_STRIDES");
        long[] ss = KernelSpec.ints(f[4], "SUB_STRIDES");
        if (sn.length != dn.length || ss.length != ds.length) {
            throw new IllegalArgumentException("each dims list needs one stride per dim");
        }
        long subSize;
        try {
            positions = KernelSpec.product(dn, 0, dn.length);
            subSize = KernelSpec.product(ds, 0, ds.length);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("sizes too large");
        }
        long reach = KernelSpec.maxReach(dn, sn), subReach = KernelSpec.maxReach(ds, ss);
        if (reach > 0 && subSize > 0 && reach + subReach - 1 > size) {
            throw new IllegalArgumentException("sub-tensors reach index " + (reach + subReach - 2)
                + " beyond SIZE " + size);
        }
        if (size > KernelSpec.JAVA_ARRAY || subSize > KernelSpec.JAVA_ARRAY) {
            throw new IllegalArgumentException("arrays longer than a Java array");
        }
        sub = new int[(int) subSize];
        int[] idx = new int[ds.length];
        long off = 0;
        for (int e = 0; e < sub.length; e++) {
            sub[e] = (int) off;
            for (int t = ds.length - 1; t >= 0; t--) {
                if (++idx[t] < ds[t]) {
                    off += ss[t];
                    break;
                }
                idx[t] = 0;
                off -= ss[t] * (ds[t] - 1);
            }
        }
    }

    /** Flat offset of the sub-tensor at position pos (0 <= pos < positions). */
    int base(long pos) {
        long base = 0;
        for (int t = dn.length - 1; t >= 0; t--) {
            base += (pos % dn[t]) * sn[t];
            pos /= dn[t];
        }
        return (int) base;
    }
}

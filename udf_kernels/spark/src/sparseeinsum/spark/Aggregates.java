package sparseeinsum.spark;

import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.catalog.functions.AggregateFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Aggregates over DOUBLE arrays (the port of udf_kernels/duckdb/aggregates.c), run by
 * Spark as partial aggregates: each task folds its rows into one state per group before
 * the shuffle, which moves states, not rows.
 *
 * <pre>
 *   se_vsum(v), se_vmax(v), se_vmin(v)   element-wise SUM / MAX / MIN (NaN propagates)
 *   se_wsum(w, v)                        element-wise SUM of w * v, without forming w * v
 *   se_ksum(spec, a, b)                  element-wise SUM of a product-sum kernel's results
 *   se_stack(gspec, val, pos)            scatters each sub-tensor val (array or DOUBLE) to
 *                                        position pos of a zero tensor of SIZE elements
 *   se_stack_packed(pos, val)            scalars val at flat positions pos, packed sparse
 * </pre>
 *
 * NULL values are skipped (a NULL sub-tensor of se_stack is all zeros); an empty group
 * gives NULL.
 */
final class Aggregates {
    private Aggregates() {
    }

    /*
     * States are Object[]s of JDK types only: Spark deserializes them with a class loader
     * that does not see the jar's classes (spark.jars). An array aggregate's state is
     * {double[] v (null until the group's first row), String spec (se_stack)}; se_stack_packed's
     * is {long[] pos, double[] val, int[] {n}} (pairs in arrival order).
     */
    private static final int V = 0, SPEC = 1, POS = 0, VAL = 1, N = 2;

    static double[] v(Object[] s) {
        return (double[]) s[V];
    }
    /** acc[i] = AGG(acc[i], w * x[i]) (w 1 for max/min) over a non-NULL array x. */
    static void fold(int agg, double[] acc, double w, ArrayData x, String fn) {
        int n = x.numElements();
        if (n != acc.length) {
            throw new IllegalArgumentException(fn + ": arrays in one group must have the same length ("
                + acc.length + " and " + n + ")");
        }
        if (!(x instanceof UnsafeArrayData)) {
            fold(agg, acc, w, Arrays2.doubles(x, fn, "an array"));
            return;
        }
        UnsafeArrayData u = (UnsafeArrayData) x;
        Object base = u.getBaseObject();
        long words = (n + 63) / 64, off = u.getBaseOffset() + 8;
        for (long i = 0; i < words; i++) {
            if (Platform.getLong(base, off + 8 * i) != 0) {
                throw new IllegalArgumentException(fn + ": an array contains NULL elements");
            }
        }
        off += 8 * words;
        if (agg == KernelSpec.SUM) {
            for (int i = 0; i < n; i++) {
                acc[i] += w * Platform.getDouble(base, off + 8L * i);
            }
        } else {
            for (int i = 0; i < n; i++) {
                step(agg, acc, i, Platform.getDouble(base, off + 8L * i));
            }
        }
    }

    static void fold(int agg, double[] acc, double w, double[] x) {
        if (agg == KernelSpec.SUM) {
            for (int i = 0; i < x.length; i++) {
                acc[i] += w * x[i];
            }
        } else {
            for (int i = 0; i < x.length; i++) {
                step(agg, acc, i, x[i]);
            }
        }
    }

    private static void step(int agg, double[] acc, int i, double v) {
        if (agg == KernelSpec.MAX ? (v > acc[i] || v != v) : (v < acc[i] || v != v)) {
            acc[i] = v;     // max/min propagate NaN like NumPy
        }
    }

    /** Base of the aggregates returning a group's array. */
    abstract static class ArrayAgg extends Bound implements AggregateFunction<Object[], ArrayData> {
        ArrayAgg(String name, DataType[] inputs) {
            super(name, KernelFn.ARRAY, inputs);
        }

        @Override
        public Object[] newAggregationState() {
            return new Object[2];
        }

        @Override
        public Object[] merge(Object[] t, Object[] s) {
            if (v(s) == null) {
                return t;
            }
            if (v(t) == null) {
                return s;
            }
            if (v(t).length != v(s).length) {
                throw new IllegalArgumentException(name + ": arrays in one group must have the same length ("
                    + v(t).length + " and " + v(s).length + ")");
            }
            fold(name.equals("se_vmax") ? KernelSpec.MAX : name.equals("se_vmin") ? KernelSpec.MIN
                 : KernelSpec.SUM, v(t), 1.0, v(s));
            return t;
        }

        @Override
        public ArrayData produceResult(Object[] s) {
            return v(s) == null ? null : Arrays2.array(v(s));
        }
    }

    /** se_vsum / se_vmax / se_vmin (v), se_wsum (w, v). */
    static final class VAgg extends ArrayAgg {
        final int agg;
        final boolean weighted;

        VAgg(String name, int agg, boolean weighted) {
            super(name, weighted ? new DataType[] {DataTypes.DoubleType, KernelFn.ARRAY}
                  : new DataType[] {KernelFn.ARRAY});
            this.agg = agg;
            this.weighted = weighted;
        }

        @Override
        public Object[] update(Object[] s, InternalRow row) {
            int col = weighted ? 1 : 0;
            if (row.isNullAt(col) || (weighted && row.isNullAt(0))) {
                return s;
            }
            ArrayData x = row.getArray(col);
            double w = weighted ? row.getDouble(0) : 1.0;
            if (v(s) == null) {      // a copy of the first row's array (w times it)
                double[] first = Arrays2.doubles(x, name, "an array").clone();
                for (int i = 0; weighted && i < first.length; i++) {
                    first[i] *= w;
                }
                s[V] = first;
                return s;
            }
            fold(agg, v(s), w, x, name);
            return s;
        }
    }

    /** se_ksum(spec, a, b): the sum of a product-sum kernel's results, never forming them.
     *  Where the kernel is a matrix product, each row's a^T and b are stacked along k (state
     *  slots STACK: {double[] at, double[] bt, int[] {rows}}, at most as many doubles as the
     *  result) and each stack is added in one product (BLAS, beta 1); other kernels add
     *  row by row. */
    static final class KSum extends ArrayAgg {
        private static final int AT = 2, BT = 3, USED = 4;

        KSum() {
            super("se_ksum", new DataType[] {DataTypes.StringType, KernelFn.ARRAY, KernelFn.ARRAY});
        }

        @Override
        public Object[] newAggregationState() {
            return new Object[5];
        }

        @Override
        public Object[] update(Object[] s, InternalRow row) {
            if (row.isNullAt(0)) {
                throw new IllegalArgumentException("se_ksum: the spec is NULL");
            }
            if (row.isNullAt(1) || row.isNullAt(2)) {
                return s;       // a NULL array adds nothing
            }
            KernelSpec ks = KernelSpec.of(row.getUTF8String(0), name);
            if (!ks.productSum() || ks.packed[0] || ks.packed[1]) {
                throw new IllegalArgumentException("se_ksum: spec \"" + ks.text
                    + "\" is not a product-sum of two dense arrays");
            }
            double[] a = KernelFn.input(ks, 0, row.getArray(1), name);
            double[] b = KernelFn.input(ks, 1, row.getArray(2), name);
            if (v(s) == null) {
                s[V] = new double[(int) ks.outSize];
                s[SPEC] = ks.text;
            } else if (!s[SPEC].equals(ks.text)) {
                throw new IllegalArgumentException("se_ksum: the spec changes within a group (\""
                    + s[SPEC] + "\" and \"" + ks.text + "\")");
            }
            KernelSpec.Gemm g = ks.gemm;
            if (g == null || g.batch != 1) {
                ks.runInto(a, b, v(s), 1.0, name);
                return s;
            }
            int m = (int) g.m, n = (int) g.n, k = (int) g.k;
            if (s[AT] == null) {
                int rows = Math.max(k, Math.min(1 << 16, v(s).length / Math.max(1, m + n)));
                s[AT] = new double[rows * m];
                s[BT] = new double[rows * n];
                s[USED] = new int[1];
            }
            double[] at = (double[]) s[AT], bt = (double[]) s[BT];
            int used = ((int[]) s[USED])[0];
            if ((used + k) * m > at.length || (used + k) * n > bt.length) {
                flush(s);
                used = 0;
            }
            for (int kk = 0; kk < k; kk++, used++) {
                for (int i = 0; i < m; i++) {
                    at[used * m + i] = a[(int) (i * g.aM + kk * g.aK)];
                }
                for (int j = 0; j < n; j++) {
                    bt[used * n + j] = b[(int) (kk * g.bK + j * g.bN)];
                }
            }
            ((int[]) s[USED])[0] = used;
            return s;
        }

        /** Adds the stacked rows into the state's array: c += at^T bt. */
        private static void flush(Object[] s) {
            if (s[USED] == null || ((int[]) s[USED])[0] == 0) {
                return;
            }
            KernelSpec.Gemm g = new KernelSpec((String) s[SPEC]).gemm;
            int used = ((int[]) s[USED])[0];
            g.addTransposed(used, (double[]) s[AT], (double[]) s[BT], v(s));
            ((int[]) s[USED])[0] = 0;
        }

        @Override
        public Object[] merge(Object[] t, Object[] s) {
            flush(t);
            flush(s);
            return super.merge(t, s);
        }

        @Override
        public ArrayData produceResult(Object[] s) {
            flush(s);
            return super.produceResult(s);
        }
    }

    /** se_stack(gspec, val, pos): sub-tensors scattered by position into a zero tensor. */
    static final class Stack extends ArrayAgg {
        final boolean list;

        Stack(boolean list) {
            super("se_stack", new DataType[] {DataTypes.StringType,
                list ? KernelFn.ARRAY : DataTypes.DoubleType, DataTypes.LongType});
            this.list = list;
        }

        @Override
        public Object[] update(Object[] s, InternalRow row) {
            if (row.isNullAt(0)) {
                return s;
            }
            String text = row.getUTF8String(0).toString();
            GatherSpec g = GatherSpec.of(row.getUTF8String(0), name);
            if (v(s) == null) {
                s[V] = new double[(int) g.size];
                Arrays.fill(v(s), g.fill);
                s[SPEC] = text;
            } else if (!s[SPEC].equals(text)) {
                throw new IllegalArgumentException("se_stack: the spec changes within a group (\""
                    + s[SPEC] + "\" and \"" + text + "\")");
            }
            if (row.isNullAt(1)) {
                return s;       // an all-zero sub-tensor
            }
            if (row.isNullAt(2)) {
                throw new IllegalArgumentException("se_stack: pos is NULL");
            }
            double[] x = list ? Arrays2.doubles(row.getArray(1), name, "val")
                : new double[] {row.getDouble(1)};
            long pos = row.getLong(2);
            if (x.length != g.sub.length) {
                throw new IllegalArgumentException("se_stack: val has " + x.length + " elements but spec \""
                    + text + "\" has sub-tensors of " + g.sub.length);
            }
            if (pos < 0 || pos >= g.positions) {
                throw new IllegalArgumentException("se_stack: position " + pos + " out of range 0.."
                    + (g.positions - 1) + " of spec \"" + text + "\"");
            }
            int base = g.base(pos);
            double[] out = v(s);
            for (int e = 0; e < x.length; e++) {
                out[base + g.sub[e]] = x[e];
            }
            return s;
        }

        /** Positions of one group are disjoint and what a state did not write is the fill:
         *  the source's elements other than it are kept (for 0, its stored ones: a sum
         *  would turn a -0.0 into +0.0). */
        @Override
        public Object[] merge(Object[] t, Object[] s) {
            if (v(s) == null) {
                return t;
            }
            if (v(t) == null) {
                return s;
            }
            if (!t[SPEC].equals(s[SPEC])) {
                throw new IllegalArgumentException("se_stack: the spec changes within a group (\""
                    + t[SPEC] + "\" and \"" + s[SPEC] + "\")");
            }
            double[] from = v(s), to = v(t);
            double fill = GatherSpec.of(UTF8String.fromString((String) t[SPEC]), name).fill;
            for (int e = 0; e < from.length; e++) {
                if (KernelSpec.differs(from[e], fill)) {
                    to[e] = from[e];
                }
            }
            return t;
        }
    }

    /** se_stack_packed(pos, val): a group's scalars packed sparse, sorted by position. */
    static final class StackPacked extends Bound implements AggregateFunction<Object[], ArrayData> {
        StackPacked() {
            super("se_stack_packed", KernelFn.ARRAY, DataTypes.LongType, DataTypes.DoubleType);
        }

        @Override
        public Object[] newAggregationState() {
            return new Object[] {new long[0], new double[0], new int[1]};
        }

        private static int n(Object[] s) {
            return ((int[]) s[N])[0];
        }

        /** Room for `more` pairs (the capacity doubles). */
        private static void reserve(Object[] s, int more) {
            long[] pos = (long[]) s[POS];
            int n = n(s);
            if (n + more > pos.length) {
                int cap = Math.max(Math.max(16, 2 * pos.length), n + more);
                s[POS] = Arrays.copyOf(pos, cap);
                s[VAL] = Arrays.copyOf((double[]) s[VAL], cap);
            }
        }

        @Override
        public Object[] update(Object[] s, InternalRow row) {
            if (row.isNullAt(0) || row.isNullAt(1)) {
                throw new IllegalArgumentException("se_stack_packed: " + (row.isNullAt(0) ? "pos" : "val")
                    + " is NULL");
            }
            long pos = row.getLong(0);
            if (pos < 0) {
                throw new IllegalArgumentException("se_stack_packed: negative position " + pos);
            }
            reserve(s, 1);
            int n = n(s);
            ((long[]) s[POS])[n] = pos;
            ((double[]) s[VAL])[n] = row.getDouble(1);
            ((int[]) s[N])[0] = n + 1;
            return s;
        }

        @Override
        public Object[] merge(Object[] t, Object[] s) {
            int m = n(s), n = n(t);
            if (m == 0) {
                return t;
            }
            reserve(t, m);
            System.arraycopy(s[POS], 0, t[POS], n, m);
            System.arraycopy(s[VAL], 0, t[VAL], n, m);
            ((int[]) t[N])[0] = n + m;
            return t;
        }

        @Override
        public ArrayData produceResult(Object[] s) {
            int n = n(s);
            long[] pos = (long[]) s[POS];
            double[] val = (double[]) s[VAL];
            if (n == 0) {
                return null;
            }
            Integer[] order = new Integer[n];
            for (int k = 0; k < n; k++) {
                order[k] = k;
            }
            Arrays.sort(order, (x, y) -> Long.compare(pos[x], pos[y]));
            double[] out = new double[2 * n];
            for (int k = 0; k < n; k++) {
                long p = pos[order[k]];
                if (k > 0 && p == pos[order[k - 1]]) {
                    throw new IllegalArgumentException("se_stack_packed: position " + p
                        + " appears twice in one group");
                }
                out[k] = p;
                out[n + k] = val[order[k]];
            }
            return Arrays2.array(out);
        }
    }
}

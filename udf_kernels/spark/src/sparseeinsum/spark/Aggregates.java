package sparseeinsum.spark;

import java.io.Serializable;
import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.catalog.functions.AggregateFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.Platform;

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

    /** A group's array (null until its first row). */
    static final class VState implements Serializable {
        private static final long serialVersionUID = 1L;
        double[] v;
        String spec;      // se_stack: the group's spec, to check it does not change
    }

    /** A group's (position, value) pairs in arrival order. */
    static final class PState implements Serializable {
        private static final long serialVersionUID = 1L;
        long[] pos = new long[0];
        double[] val = new double[0];
        int n;

        void reserve(int more) {
            if (n + more > pos.length) {
                int cap = Math.max(Math.max(16, 2 * pos.length), n + more);
                pos = Arrays.copyOf(pos, cap);
                val = Arrays.copyOf(val, cap);
            }
        }
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
    abstract static class ArrayAgg implements AggregateFunction<VState, ArrayData> {
        final String name;
        final DataType[] inputs;

        ArrayAgg(String name, DataType[] inputs) {
            this.name = name;
            this.inputs = inputs;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public DataType[] inputTypes() {
            return inputs;
        }

        @Override
        public DataType resultType() {
            return KernelFn.ARRAY;
        }

        @Override
        public VState newAggregationState() {
            return new VState();
        }

        @Override
        public VState merge(VState t, VState s) {
            if (s.v == null) {
                return t;
            }
            if (t.v == null) {
                return s;
            }
            if (t.v.length != s.v.length) {
                throw new IllegalArgumentException(name + ": arrays in one group must have the same length ("
                    + t.v.length + " and " + s.v.length + ")");
            }
            fold(name.equals("se_vmax") ? KernelSpec.MAX : name.equals("se_vmin") ? KernelSpec.MIN
                 : KernelSpec.SUM, t.v, 1.0, s.v);
            return t;
        }

        @Override
        public ArrayData produceResult(VState s) {
            return s.v == null ? null : Arrays2.array(s.v);
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
        public VState update(VState s, InternalRow row) {
            int col = weighted ? 1 : 0;
            if (row.isNullAt(col) || (weighted && row.isNullAt(0))) {
                return s;
            }
            ArrayData x = row.getArray(col);
            double w = weighted ? row.getDouble(0) : 1.0;
            if (s.v == null) {      // the first row's array (w times it), as it is
                s.v = Arrays2.doubles(x, name, "an array");
                for (int i = 0; weighted && i < s.v.length; i++) {
                    s.v[i] *= w;
                }
                return s;
            }
            fold(agg, s.v, w, x, name);
            return s;
        }
    }

    /** se_ksum(spec, a, b): the sum of a product-sum kernel's results, never forming them
     *  (a matrix product kernel adds into the state with BLAS, beta 1). */
    static final class KSum extends ArrayAgg {
        KSum() {
            super("se_ksum", new DataType[] {DataTypes.StringType, KernelFn.ARRAY, KernelFn.ARRAY});
        }

        @Override
        public VState update(VState s, InternalRow row) {
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
            if (s.v == null) {
                s.v = new double[(int) ks.outSize];
            }
            ks.runInto(a, b, s.v, 1.0, name);
            return s;
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
        public VState update(VState s, InternalRow row) {
            if (row.isNullAt(0)) {
                return s;
            }
            String text = row.getUTF8String(0).toString();
            GatherSpec g = GatherSpec.of(row.getUTF8String(0), name);
            if (s.v == null) {
                s.v = new double[(int) g.size];
                s.spec = text;
            } else if (!s.spec.equals(text)) {
                throw new IllegalArgumentException("se_stack: the spec changes within a group (\""
                    + s.spec + "\" and \"" + text + "\")");
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
            for (int e = 0; e < x.length; e++) {
                s.v[base + g.sub[e]] = x[e];
            }
            return s;
        }

        /** Positions of one group are disjoint and what a state did not write is +0.0: the
         *  source's stored elements are kept (a sum would turn a -0.0 into +0.0). */
        @Override
        public VState merge(VState t, VState s) {
            if (s.v == null) {
                return t;
            }
            if (t.v == null) {
                return s;
            }
            if (!t.spec.equals(s.spec)) {
                throw new IllegalArgumentException("se_stack: the spec changes within a group (\""
                    + t.spec + "\" and \"" + s.spec + "\")");
            }
            for (int e = 0; e < s.v.length; e++) {
                if (KernelSpec.stored(s.v[e])) {
                    t.v[e] = s.v[e];
                }
            }
            return t;
        }
    }

    /** se_stack_packed(pos, val): a group's scalars packed sparse, sorted by position. */
    static final class StackPacked implements AggregateFunction<PState, ArrayData> {
        @Override
        public String name() {
            return "se_stack_packed";
        }

        @Override
        public DataType[] inputTypes() {
            return new DataType[] {DataTypes.LongType, DataTypes.DoubleType};
        }

        @Override
        public DataType resultType() {
            return KernelFn.ARRAY;
        }

        @Override
        public PState newAggregationState() {
            return new PState();
        }

        @Override
        public PState update(PState s, InternalRow row) {
            if (row.isNullAt(0) || row.isNullAt(1)) {
                throw new IllegalArgumentException("se_stack_packed: " + (row.isNullAt(0) ? "pos" : "val")
                    + " is NULL");
            }
            long pos = row.getLong(0);
            if (pos < 0) {
                throw new IllegalArgumentException("se_stack_packed: negative position " + pos);
            }
            s.reserve(1);
            s.pos[s.n] = pos;
            s.val[s.n++] = row.getDouble(1);
            return s;
        }

        @Override
        public PState merge(PState t, PState s) {
            if (s.n == 0) {
                return t;
            }
            t.reserve(s.n);
            System.arraycopy(s.pos, 0, t.pos, t.n, s.n);
            System.arraycopy(s.val, 0, t.val, t.n, s.n);
            t.n += s.n;
            return t;
        }

        @Override
        public ArrayData produceResult(PState s) {
            if (s.n == 0) {
                return null;
            }
            Integer[] order = new Integer[s.n];
            for (int k = 0; k < s.n; k++) {
                order[k] = k;
            }
            Arrays.sort(order, (x, y) -> Long.compare(s.pos[x], s.pos[y]));
            double[] out = new double[2 * s.n];
            for (int k = 0; k < s.n; k++) {
                long p = s.pos[order[k]];
                if (k > 0 && p == s.pos[order[k - 1]]) {
                    throw new IllegalArgumentException("se_stack_packed: position " + p
                        + " appears twice in one group");
                }
                out[k] = p;
                out[s.n + k] = s.val[order[k]];
            }
            return Arrays2.array(out);
        }
    }
}

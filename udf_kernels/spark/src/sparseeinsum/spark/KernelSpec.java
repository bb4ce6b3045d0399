package sparseeinsum.spark;

import dev.ludovic.netlib.blas.BLAS;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A kernel spec of sparse_einsum/kernels/spec.py and the loops that run it: the port of
 * udf_kernels/common/se_kernel.c (parsing, the strided loop, matrix products, products
 * driven by a packed sparse input).
 *
 * <pre>  OP;AGG;N_OUT;D0,D1,...;[~]SA0,SA1,...[;[~]SB0,SB1,...]</pre>
 *
 * A stride list marked ~ is an input given as a packed sparse payload: the flat offsets of
 * its non-zeros within the dense payload the strides describe (ascending), then their
 * values, in one array of 2 * nnz doubles; marked ~FILL: its absent entries are FILL.
 */
final class KernelSpec {
    static final int SUM = 0, MAX = 1, MIN = 2;
    static final String[] AGGS = {"sum", "max", "min"};
    static final int MAXDIMS = 32;

    final String text;
    int op, agg, nOut, ndims, arity;
    double c;
    long[] dims;
    final long[][] st = new long[2][];
    long outSize, redSize;
    final long[] need = new long[2];         // minimal input lengths (dense form, if packed)
    final boolean[] packed = new boolean[2];
    final double[] fill = new double[2];     // the value of a packed input's absent entries
    Gemm gemm;                               // non-null: the kernel is a matrix product
    Sparse sparse;                           // non-null: runs over its packed input's non-zeros

    static final long JAVA_ARRAY = Integer.MAX_VALUE - 16;     // the longest array a JVM makes
    private static final ThreadLocal<Map<UTF8String, KernelSpec>> PARSED =
        ThreadLocal.withInitial(HashMap::new);

    /** The parsed spec of `text`, parsed once per thread (a statement's kernels alternate
     *  row by row). */
    static KernelSpec of(UTF8String text, String fn) {
        Map<UTF8String, KernelSpec> parsed = PARSED.get();
        KernelSpec ks = parsed.get(text);
        if (ks != null) {
            return ks;
        }
        try {
            ks = new KernelSpec(text.toString());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                fn + ": invalid kernel spec \"" + text + "\": " + e.getMessage());
        }
        if (parsed.size() >= 64) {
            parsed.clear();
        }
        parsed.put(text.clone(), ks);
        return ks;
    }

    KernelSpec(String text) {
        this.text = text;
        String[] f = text.split(";", -1);
        if (f.length < 5 || f.length > 6) {
            throw new IllegalArgumentException("expected OP;AGG;N_OUT;DIMS;[~]STRIDES_A[;[~]STRIDES_B]");
        }
        arity = f.length - 4;
        String name = f[0];
        int colon = name.indexOf(':');
        String constant = colon >= 0 ? name.substring(colon + 1) : null;
        if (colon >= 0) {
            name = name.substring(0, colon);
        }
        op = Arrays.asList(Ops.NAMES).indexOf(name);
        if (op < 0) {
            throw new IllegalArgumentException("unknown operator \"" + name + "\"");
        }
        if ((op >= Ops.FIRST_CONST) != (constant != null)) {
            throw new IllegalArgumentException(constant != null ? "\"" + name + "\" takes no constant"
                : "\"" + name + "\" needs a constant (" + name + ":C)");
        }
        if (constant != null) {
            try {
                c = Double.parseDouble(constant);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad constant \"" + constant + "\"");
            }
        }
        if ((op < Ops.N_BINARY) != (arity == 2)) {
            throw new IllegalArgumentException("\"" + name + "\" takes " + (op < Ops.N_BINARY ? 2 : 1)
                + " input(s) but the spec has " + arity + " stride list(s)");
        }
        agg = Arrays.asList(AGGS).indexOf(f[1]);
        if (agg < 0) {
            throw new IllegalArgumentException("unknown aggregate \"" + f[1] + "\" (sum, max or min)");
        }
        long[] n = ints(f[2], "N_OUT");
        if (n.length != 1) {
            throw new IllegalArgumentException("N_OUT must be one integer");
        }
        dims = ints(f[3], "DIMS");
        ndims = dims.length;
        if (n[0] > ndims) {
            throw new IllegalArgumentException("N_OUT " + n[0] + " exceeds the " + ndims + " loop dims");
        }
        nOut = (int) n[0];
        st[1] = new long[ndims];
        for (int k = 0; k < arity; k++) {
            String field = f[4 + k];
            packed[k] = field.startsWith("~");
            field = packed[k] ? field.substring(1) : field;
            int mark = field.indexOf(':');
            if (packed[k] && mark >= 0) {
                fill[k] = number(field.substring(0, mark), "default of packed input " + (k + 1));
                field = field.substring(mark + 1);
            }
            st[k] = ints(field, "STRIDES");
            if (st[k].length != ndims) {
                throw new IllegalArgumentException("input " + (k + 1) + " needs one stride per loop dim (" + ndims + ")");
            }
            need[k] = maxReach(dims, st[k]);
        }
        try {
            outSize = product(dims, 0, nOut);
            redSize = product(dims, nOut, ndims);
            Math.multiplyExact(outSize, redSize);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("loop space too large");
        }
        // a packed input is held as its entries: only densifying it needs its whole extent
        if (outSize > JAVA_ARRAY || (!packed[0] && need[0] > JAVA_ARRAY) || (!packed[1] && need[1] > JAVA_ARRAY)) {
            throw new IllegalArgumentException("arrays longer than a Java array");
        }
        gemm = Gemm.of(this);
        sparse = Sparse.of(this);
    }

    /** A number as the specs spell it (Python's repr: inf, -inf, 2.5, 1e+300). */
    static double number(String text, String what) {
        switch (text) {
            case "inf":
                return Double.POSITIVE_INFINITY;
            case "-inf":
                return Double.NEGATIVE_INFINITY;
            default:
                try {
                    return Double.parseDouble(text);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("bad " + what + " \"" + text + "\"");
                }
        }
    }

    /** "1,2,3" (non-negative integers; "" is the empty list). */
    static long[] ints(String field, String what) {
        if (field.isEmpty()) {
            return new long[0];
        }
        String[] parts = field.split(",", -1);
        if (parts.length > MAXDIMS) {
            throw new IllegalArgumentException(what + " has more than " + MAXDIMS + " entries");
        }
        long[] out = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            String p = parts[i];
            if (p.isEmpty() || !p.chars().allMatch(ch -> ch >= '0' && ch <= '9')) {
                throw new IllegalArgumentException(what + " must be non-negative integers separated by commas");
            }
            try {
                out[i] = Long.parseLong(p);
            } catch (NumberFormatException e) {
                out[i] = Long.MAX_VALUE;
            }
            if (out[i] > (long) Integer.MAX_VALUE * 1024) {
                throw new IllegalArgumentException(what + " has an integer out of range");
            }
        }
        return out;
    }

    static long product(long[] dims, int from, int to) {
        long p = 1;
        for (int t = from; t < to; t++) {
            p = Math.multiplyExact(p, dims[t]);
        }
        return p;
    }

    /** One past the largest flat index reached by dims/strides (0 when some dim is 0). */
    static long maxReach(long[] dims, long[] strides) {
        long r = 0;
        try {
            for (int t = 0; t < dims.length; t++) {
                if (dims[t] == 0) {
                    return 0;
                }
                r = Math.addExact(r, Math.multiplyExact(dims[t] - 1, strides[t]));
            }
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("strides overflow");
        }
        return r + 1;
    }

    boolean productSum() {
        return op == 0 && agg == SUM && arity == 2;
    }

    // ------------------------------------------------------------ running one tuple

    /**
     * The kernel on one tuple: a and b dense (length >= need) or packed payloads, b null
     * for a unary spec. A product-sum with one packed input runs over its non-zeros where
     * the dense input is finite; other kernels densify packed inputs.
     */
    double[] run(double[] a, double[] b, String fn) {
        double[] out = new double[(int) outSize];
        runInto(a, b, out, 0.0, fn);
        return out;
    }

    /** out = beta * out + the kernel's result (beta 0 or 1). */
    void runInto(double[] a, double[] b, double[] out, double beta, String fn) {
        double[][] in = {a, b};
        if (packed[0] || packed[1]) {
            if (sparse != null && sparse.skips(in[1 - sparse.s])) {
                sparse.add(in[sparse.s], in[1 - sparse.s], out, beta, fn);
                return;
            }
            for (int k = 0; k < arity; k++) {
                if (packed[k]) {
                    in[k] = unpack(in[k], need[k], fill[k], fn);
                }
            }
        }
        if (gemm != null) {
            gemm.run(in[0], in[1], out, beta);
        } else if (beta == 0.0) {
            loop(in[0], in[1], out);
        } else {
            double[] t = new double[out.length];
            loop(in[0], in[1], t);
            for (int i = 0; i < t.length; i++) {
                out[i] += t[i];
            }
        }
    }

    /** The strided loop: out[o] = AGG_r OP(a[..], b[..]) (se_run_kernel). */
    void loop(double[] a, double[] b, double[] out) {
        if (outSize == 0) {
            return;
        }
        if (b == null) {
            b = a;     // unary: the strides of b are all zero
        }
        long[] sa = st[0], sb = st[1];
        if (ndims == nOut) {
            elementwise(a, b, out);
            return;
        }
        int[] idx = new int[ndims];
        long red = redSize;
        int oa = 0, ob = 0;
        for (int o = 0; o < outSize; o++) {
            double acc = agg == SUM ? 0.0 : agg == MAX ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
            int ra = oa, rb = ob;
            for (long r = 0; r < red; r++) {
                double v = Ops.apply(op, a[ra], b[rb], c);
                if (agg == SUM) {
                    acc += v;
                } else if (agg == MAX ? (v > acc || v != v) : (v < acc || v != v)) {
                    acc = v;
                }
                for (int t = ndims - 1; t >= nOut; t--) {       // odometer over reduced dims
                    if (++idx[t] < dims[t]) {
                        ra += sa[t];
                        rb += sb[t];
                        break;
                    }
                    idx[t] = 0;
                    ra -= sa[t] * (dims[t] - 1);
                    rb -= sb[t] * (dims[t] - 1);
                }
            }
            out[o] = acc;
            for (int t = nOut - 1; t >= 0; t--) {                   // odometer over output dims
                if (++idx[t] < dims[t]) {
                    oa += sa[t];
                    ob += sb[t];
                    break;
                }
                idx[t] = 0;
                oa -= sa[t] * (dims[t] - 1);
                ob -= sb[t] * (dims[t] - 1);
            }
        }
    }

    // ------------------------------------------------------------ packed sparse payloads

    /** Whether a relation stores x: anything but +0.0 (1 / -0.0 is -inf, as in NumPy). */
    static boolean stored(double x) {
        return Double.doubleToRawLongBits(x) != 0L;
    }

    /** Whether a tensor of default fill stores x: x differs from it (stored, for 0). */
    static boolean differs(double x, double fill) {
        return fill == 0.0 ? stored(x) : x != fill;
    }

    static boolean allFinite(double[] x) {
        double bad = 0.0;
        for (double v : x) {
            bad += v - v;     // NaN exactly for inf and NaN
        }
        return bad == 0.0;
    }

    /** The dense form (size elements) of a packed payload whose absent entries are fill. */
    static double[] unpack(double[] packed, long size, double fill, String fn) {
        if (packed.length % 2 != 0) {
            throw new IllegalArgumentException(fn + ": a packed payload has an even length, not " + packed.length);
        }
        if (size > JAVA_ARRAY) {
            throw new IllegalArgumentException(fn + ": a packed payload of " + size
                + " elements is densified (the other input is not finite), longer than a Java array");
        }
        int nnz = packed.length / 2;
        double[] out = new double[(int) size];
        if (fill != 0.0) {
            Arrays.fill(out, fill);
        }
        for (int e = 0; e < nnz; e++) {
            double at = packed[e];
            if (!(at >= 0 && at < (double) size)) {
                throw new IllegalArgumentException(fn + ": offset " + at + " outside a payload of " + size + " elements");
            }
            out[(int) at] = packed[nnz + e];
        }
        return out;
    }

    /** x packed: the offsets of its stored values, then the values. */
    static double[] pack(double[] x) {
        int nnz = 0;
        for (double v : x) {
            nnz += stored(v) ? 1 : 0;
        }
        double[] out = new double[2 * nnz];
        for (int i = 0, j = 0; i < x.length; i++) {
            if (stored(x[i])) {
                out[j] = i;
                out[nnz + j++] = x[i];
            }
        }
        return out;
    }

    /** A kernel driven by the stored entries of its one packed input s, whose absent
     *  entries give the aggregate's identity: a product-sum (absent 0), a min of sums
     *  (absent inf) or a max of sums (absent -inf) (se_sparse). */
    static final class Sparse {
        int s, nk, nf, agg;
        double init;                    // the aggregate's identity: the result where s is absent
        long[] kDim = new long[MAXDIMS], kSt = new long[MAXDIMS], kDst = new long[MAXDIMS], kOst = new long[MAXDIMS];
        long[] fDim = new long[MAXDIMS], fDst = new long[MAXDIMS], fOst = new long[MAXDIMS];
        long size;
        boolean empty;

        static Sparse of(KernelSpec ks) {
            if (ks.arity != 2 || ks.packed[0] == ks.packed[1]) {
                return null;
            }
            int s = ks.packed[0] ? 0 : 1, d = 1 - s;
            if (!Ops.sparseDriven(ks.op, ks.agg, ks.fill[s])) {
                return null;
            }
            Sparse sk = new Sparse();
            long[] oc = outStrides(ks);
            sk.s = s;
            sk.agg = ks.agg;
            sk.init = ks.agg == SUM ? 0.0 : ks.fill[s];
            sk.size = ks.need[s];
            for (int t = 0; t < ks.ndims; t++) {
                sk.empty |= ks.dims[t] == 0;
                if (ks.dims[t] == 1) {
                    continue;
                }
                if (ks.st[s][t] == 0) {
                    sk.fDim[sk.nf] = ks.dims[t];
                    sk.fDst[sk.nf] = ks.st[d][t];
                    sk.fOst[sk.nf++] = oc[t];
                    continue;
                }
                int j = sk.nk++;
                for (; j > 0 && sk.kSt[j - 1] < ks.st[s][t]; j--) {
                    sk.kDim[j] = sk.kDim[j - 1];
                    sk.kSt[j] = sk.kSt[j - 1];
                    sk.kDst[j] = sk.kDst[j - 1];
                    sk.kOst[j] = sk.kOst[j - 1];
                }
                sk.kDim[j] = ks.dims[t];
                sk.kSt[j] = ks.st[s][t];
                sk.kDst[j] = ks.st[d][t];
                sk.kOst[j] = oc[t];
            }
            long reach = 0;     // offsets decode uniquely when each stride exceeds the smaller's reach
            for (int j = sk.nk - 1; j >= 0; j--) {
                if (sk.kSt[j] <= reach) {
                    return null;
                }
                reach += sk.kSt[j] * (sk.kDim[j] - 1);
            }
            return sk;
        }

        /** Whether the absent entries may be skipped against this dense input: 0 * inf,
         *  inf + -inf and NaN + inf are NaN. */
        boolean skips(double[] dense) {
            if (agg == SUM) {
                return Operands.finite(dense);
            }
            for (double v : dense) {
                if (v != v || v == -init) {
                    return false;
                }
            }
            return true;
        }

        /** out = beta * out + the product of the packed input and the dense one (a min or
         *  max of sums: beta 0, out the fold of their sums). Where the
         *  innermost free dim steps through the result or the dense input with a stride,
         *  the product runs on a row-major copy of it (relaid). */
        void add(double[] packed, double[] dense, double[] out, double beta, String fn) {
            if (packed.length % 2 != 0) {
                throw new IllegalArgumentException(fn + ": a packed payload has an even length, not " + packed.length);
            }
            if (beta == 0.0) {
                Arrays.fill(out, init);
            }
            if (empty) {
                return;
            }
            int nnz = packed.length / 2;
            Sparse byResult = beta == 0.0 ? relaid(true, out.length, nnz) : null;
            Sparse run = byResult != null ? byResult : this;
            Sparse byDense = run.relaid(false, dense.length, nnz);
            double[] w = dense;
            if (byDense != null) {
                w = new double[dense.length];
                run.permute(false, w, dense, true);
                run = byDense;
            }
            double[] o = out;
            if (byResult != null) {
                o = new double[out.length];
                Arrays.fill(o, init);
            }
            run.accumulate(packed, nnz, w, o, fn);
            if (byResult != null) {
                permute(true, o, out, false);
            }
        }

        private void accumulate(double[] packed, int nnz, double[] dense, double[] out, String fn) {
            // the outermost index of the last entry and the offsets it spans: offsets
            // ascend, so most entries share it and need no division for it (se_sparse_add)
            long outer = 0, outerLo = 0, outerHi = 0;
            Rows rows = nf == 1 && agg == SUM && fDst[0] == 1 && fOst[0] == 1
                ? new Rows((int) fDim[0], dense, out) : null;
            for (int e = 0; e < nnz; e++) {
                double at = packed[e];
                if (!(at >= 0 && at < (double) size)) {
                    throw new IllegalArgumentException(fn + ": input " + (s == 1 ? "b" : "a") + ": offset "
                        + at + " outside a payload of " + size + " elements");
                }
                long rest = (long) at, od = 0, oo = 0;
                boolean reached = true;
                for (int j = 0; j < nk && reached; j++) {
                    long i = j == 0 && rest >= outerLo && rest < outerHi ? outer
                        : kSt[j] == 1 ? rest : rest / kSt[j];
                    if (j == 0) {
                        outer = i;
                        outerLo = i * kSt[0];
                        outerHi = outerLo + kSt[0];
                    }
                    reached = i < kDim[j];
                    rest -= i * kSt[j];
                    od += i * kDst[j];
                    oo += i * kOst[j];
                }
                if (!reached || rest != 0) {
                    continue;       // an element the kernel does not read (off a diagonal)
                }
                double v = packed[nnz + e];
                if (rows != null) {
                    rows.add((int) oo, (int) od, v);
                } else if (nf == 0 && agg == SUM) {
                    out[(int) oo] += v * dense[(int) od];
                } else if (nf == 0) {
                    out[(int) oo] = fold(out[(int) oo], v + dense[(int) od]);
                } else {
                    freeLoop(0, v, dense, (int) od, out, (int) oo);
                }
            }
            if (rows != null) {
                rows.flush();
            }
        }

        /** Sums of scaled contiguous rows of the dense input into rows of the result, four
         *  entries of one result row at a time: the JIT does not vectorize a row's loop, so
         *  this reads the result row once per four input rows and keeps four reads of the
         *  dense input in flight (the entries come sorted by result row). */
        private static final class Rows {
            private final int n;
            private final double[] w, o;
            private final int[] from = new int[4];
            private final double[] by = new double[4];
            private int pending, to = -1;

            Rows(int n, double[] w, double[] o) {
                this.n = n;
                this.w = w;
                this.o = o;
            }

            void add(int oo, int wo, double v) {
                if (oo != to) {
                    flush();
                    to = oo;
                }
                from[pending] = wo;
                by[pending++] = v;
                if (pending == 4) {
                    flush();
                }
            }

            void flush() {
                int t = to;
                if (pending == 4) {
                    int a = from[0], b = from[1], c = from[2], d = from[3];
                    double va = by[0], vb = by[1], vc = by[2], vd = by[3];
                    for (int i = 0; i < n; i++) {
                        o[t + i] += va * w[a + i] + vb * w[b + i] + vc * w[c + i] + vd * w[d + i];
                    }
                } else {
                    for (int p = 0; p < pending; p++) {
                        int a = from[p];
                        double va = by[p];
                        for (int i = 0; i < n; i++) {
                            o[t + i] += va * w[a + i];
                        }
                    }
                }
                pending = 0;
            }
        }

        /** {sizes, strides} of the loop dims that step through the result (or the dense
         *  input), the packed input's dims first and the free ones last. */
        private long[][] strided(boolean result) {
            long[] d = new long[nk + nf], st = new long[nk + nf];
            int n = 0;
            for (int t = 0; t < nk + nf; t++) {
                long x = t < nk ? (result ? kOst[t] : kDst[t]) : (result ? fOst[t - nk] : fDst[t - nk]);
                if (x != 0) {
                    d[n] = t < nk ? kDim[t] : fDim[t - nk];
                    st[n++] = x;
                }
            }
            return new long[][] {Arrays.copyOf(d, n), Arrays.copyOf(st, n)};
        }

        /** This product reading (or writing) a row-major copy of the dense input (or the
         *  result) of `length` elements, its innermost free dim contiguous; null where that
         *  dim is contiguous already, where the dims do not cover the array once, or where
         *  the product reads too few elements to pay for the copy (se_kernel.c relaid). */
        private Sparse relaid(boolean result, long length, long nnz) {
            if (nf == 0) {
                return null;
            }
            long inner = result ? fOst[nf - 1] : fDst[nf - 1];
            if (inner == 0 || inner == 1) {
                return null;
            }
            long[] d = strided(result)[0];
            long elements = 1, reads = nnz;
            for (long x : d) {
                elements *= x;
            }
            for (int f = 0; f < nf; f++) {
                reads *= fDim[f];
            }
            if (elements != length || reads < 4 * length) {
                return null;
            }
            Sparse laid = new Sparse();
            laid.s = s;
            laid.agg = agg;
            laid.init = init;
            laid.nk = nk;
            laid.nf = nf;
            laid.kDim = kDim.clone();
            laid.kSt = kSt.clone();
            laid.kDst = kDst.clone();
            laid.kOst = kOst.clone();
            laid.fDim = fDim.clone();
            laid.fDst = fDst.clone();
            laid.fOst = fOst.clone();
            laid.size = size;
            long step = elements;
            for (int t = 0, n = 0; t < nk + nf; t++) {
                long[] st = t < nk ? (result ? laid.kOst : laid.kDst) : (result ? laid.fOst : laid.fDst);
                int i = t < nk ? t : t - nk;
                if (st[i] != 0) {
                    step /= d[n++];
                    st[i] = step;
                }
            }
            return laid;
        }

        /** rows[p] = strided[...] (gather) or the reverse, over the dims that step through
         *  the result (or the dense input) as this product lays it out, rows row-major. */
        private void permute(boolean result, double[] rows, double[] strided, boolean gather) {
            long[][] ds = strided(result);
            long[] d = ds[0], st = ds[1];
            int last = d.length - 1;
            long[] at = new long[d.length];
            long src = 0;
            for (int done = 0; done < rows.length; done += (int) d[last]) {
                for (int i = 0; i < d[last]; i++) {
                    if (gather) {
                        rows[done + i] = strided[(int) (src + i * st[last])];
                    } else {
                        strided[(int) (src + i * st[last])] = rows[done + i];
                    }
                }
                for (int t = last - 1; t >= 0; t--) {       // an odometer over the outer dims
                    src += st[t];
                    if (++at[t] < d[t]) {
                        break;
                    }
                    src -= at[t] * st[t];
                    at[t] = 0;
                }
            }
        }

        private void freeLoop(int f, double v, double[] w, int wo, double[] o, int oo) {
            int n = (int) fDim[f], sw = (int) fDst[f], so = (int) fOst[f];
            if (f < nf - 1) {
                for (int i = 0; i < n; i++) {
                    freeLoop(f + 1, v, w, wo + i * sw, o, oo + i * so);
                }
            } else if (agg == SUM) {
                for (int i = 0; i < n; i++) {
                    o[oo + i * so] += v * w[wo + i * sw];
                }
            } else {
                for (int i = 0; i < n; i++) {
                    o[oo + i * so] = fold(o[oo + i * so], v + w[wo + i * sw]);
                }
            }
        }

        /** min or max of acc and x, NaN propagating (SE_STEP_MIN/MAX). */
        private double fold(double acc, double x) {
            boolean take = agg == MIN ? x < acc : x > acc;
            return take || x != x ? x : acc;
        }
    }

    /** The loop without reduced dims: the innermost dim in one pass per output row. */
    private void elementwise(double[] a, double[] b, double[] out) {
        int last = ndims - 1, n = last < 0 ? 1 : (int) dims[last];
        int ia = last < 0 ? 0 : (int) st[0][last], ib = last < 0 ? 0 : (int) st[1][last];
        int[] idx = new int[ndims];
        int oa = 0, ob = 0;
        for (int o = 0; o < outSize; o += n) {
            Ops.row(op, a, oa, ia, b, ob, ib, c, out, o, n);
            for (int t = last - 1; t >= 0; t--) {                   // odometer over outer dims
                if (++idx[t] < dims[t]) {
                    oa += st[0][t];
                    ob += st[1][t];
                    break;
                }
                idx[t] = 0;
                oa -= st[0][t] * (dims[t] - 1);
                ob -= st[1][t] * (dims[t] - 1);
            }
        }
    }

    /** Row-major output offset step of each loop dim (0 for reduced dims). */
    static long[] outStrides(KernelSpec ks) {
        long[] oc = new long[ks.ndims];
        long step = 1;
        for (int t = ks.ndims - 1; t >= 0; t--) {
            oc[t] = t < ks.nOut ? step : 0;
            if (t < ks.nOut) {
                step *= ks.dims[t];
            }
        }
        return oc;
    }

    // ------------------------------------------------------------ matrix products

    /** out[b,m,n] = sum_k a[b,m,k] * b[b,k,n], each one strided axis (se_gemm). */
    static final class Gemm {
        long batch = 1, m = 1, n = 1, k = 1;
        long aB, aM, aK, bB, bK, bN, cB, cM, cN;
        private static final BLAS BLAS_ = BLAS.getInstance();
        /** netlib's Java dgemm runs products of under 2^20 multiply-adds in scalar loops
         *  and copies the operands of larger ones, while its dgemv is vectorized: products
         *  of up to 2^22 with rows of 32 or more run row by row (native BLAS keeps dgemm). */
        private static final boolean ROWS_BY_GEMV = BLAS_ instanceof dev.ludovic.netlib.blas.JavaBLAS;

        static Gemm of(KernelSpec ks) {
            if (!ks.productSum() || ks.outSize == 0 || ks.packed[0] || ks.packed[1]) {
                return null;
            }
            long[] oc = outStrides(ks);
            int[][] groups = new int[4][ks.ndims];       // batch, m, n, k
            int[] nt = new int[4];
            for (int t = 0; t < ks.ndims; t++) {
                boolean inA = ks.st[0][t] != 0, inB = ks.st[1][t] != 0;
                if (ks.dims[t] == 0) {
                    return null;
                }
                if (ks.dims[t] == 1) {
                    continue;
                }
                int g = t < ks.nOut ? (inA && inB ? 0 : inA ? 1 : inB ? 2 : -1) : (inA && inB ? 3 : -1);
                if (g < 0) {
                    return null;     // a broadcast output or a one-sided reduction
                }
                groups[g][nt[g]++] = t;
            }
            Gemm g = new Gemm();
            long[] s = new long[3];
            long[][] abc = {ks.st[0], ks.st[1], oc};
            if ((g.batch = collapse(ks.dims, groups[0], nt[0], abc, s)) < 0) {
                return null;
            }
            g.aB = s[0];
            g.bB = s[1];
            g.cB = s[2];
            if ((g.m = collapse(ks.dims, groups[1], nt[1], new long[][] {ks.st[0], oc}, s)) < 0) {
                return null;
            }
            g.aM = s[0];
            g.cM = s[1];
            if ((g.n = collapse(ks.dims, groups[2], nt[2], new long[][] {ks.st[1], oc}, s)) < 0) {
                return null;
            }
            g.bN = s[0];
            g.cN = s[1];
            if ((g.k = collapse(ks.dims, groups[3], nt[3], new long[][] {ks.st[0], ks.st[1]}, s)) < 0) {
                return null;
            }
            g.aK = s[0];
            g.bK = s[1];
            // an element-wise product is a batch of 1 x 1 x 1 products: the strided loop
            return g.m > 1 || g.n > 1 || g.k > 1 ? g : null;
        }

        /** The size of one group's dims collapsed into one axis (-1 where an operand's dims
         *  do not nest row-major); stride[x] gets operand x's stride (0 if size 1). */
        private static long collapse(long[] dims, int[] tt, int nt, long[][] ops, long[] stride) {
            long size = 1;
            Arrays.fill(stride, 0);
            for (int j = 0; j < nt; j++) {
                int t = tt[j];
                for (int x = 0; x < ops.length; x++) {
                    if (j > 0 && ops[x][tt[j - 1]] != ops[x][t] * dims[t]) {
                        return -1;
                    }
                    stride[x] = ops[x][t];
                }
                size *= dims[t];
            }
            return size;
        }

        /** c = beta * c + a b, with BLAS where the strides suit it, else loops. */
        void run(double[] a, double[] b, double[] c, double beta) {
            for (long p = 0; p < batch; p++) {
                int ao = (int) (p * aB), bo = (int) (p * bB), co = (int) (p * cB);
                if (!blas(m, n, k, a, ao, aM, aK, b, bo, bK, bN, c, co, cM, cN, beta)) {
                    loops(a, ao, b, bo, c, co, beta);
                }
            }
        }

        /** c += at^T bt over `rows` stacked rows (at: rows x m, bt: rows x n, row-major). */
        void addTransposed(int rows, double[] at, double[] bt, double[] c) {
            if (!blas(m, n, rows, at, 0, 1, m, bt, 0, n, 1, c, 0, cM, cN, 1.0)) {
                for (int r = 0; r < rows; r++) {
                    for (long i = 0; i < m; i++) {
                        double x = at[(int) (r * m + i)];
                        for (long j = 0; j < n; j++) {
                            c[(int) (i * cM + j * cN)] += x * bt[(int) (r * n + j)];
                        }
                    }
                }
            }
        }

        private void loops(double[] a, int ao, double[] b, int bo, double[] c, int co, double beta) {
            for (long i = 0; i < m; i++) {
                for (long j = 0; j < n; j++) {
                    double s = 0.0;
                    for (long kk = 0; kk < k; kk++) {
                        s += a[(int) (ao + i * aM + kk * aK)] * b[(int) (bo + kk * bK + j * bN)];
                    }
                    int at = (int) (co + i * cM + j * cN);
                    c[at] = beta * c[at] + s;
                }
            }
        }

        /** Row-major BLAS view of a rows x cols matrix with strides (sr, sc): {transposed,
         *  leading dimension}, or null when neither stride is 1. */
        private static long[] layout(long rows, long cols, long sr, long sc) {
            if (cols == 1) {
                sc = 1;
            }
            if (rows == 1) {
                sr = sc == 1 ? cols : 1;
            }
            if (sc == 1 && sr >= Math.max(cols, 1) && sr <= Integer.MAX_VALUE) {
                return new long[] {0, sr};
            }
            if (sr == 1 && sc >= Math.max(rows, 1) && sc <= Integer.MAX_VALUE) {
                return new long[] {1, sc};
            }
            return null;
        }

        /** One row-major product c = beta c + a b as column-major dgemm (c^T = b^T a^T). */
        private static boolean blas(long m, long n, long k, double[] a, int ao, long aM, long aK,
                                    double[] b, int bo, long bK, long bN, double[] c, int co,
                                    long cM, long cN, double beta) {
            if (m == 0 || n == 0) {
                return true;
            }
            if (m == 1 && k > 1 && n > 1) {     // a row times a matrix: c^T = b^T a^T
                return gemv(n, k, b, bo, bN, bK, a, ao, aK, c, co, cN, beta);
            }
            if (n == 1 && k > 1 && m > 1) {     // a matrix times a column
                return gemv(m, k, a, ao, aM, aK, b, bo, bK, c, co, cM, beta);
            }
            if (ROWS_BY_GEMV && n >= 32 && m * n * k < (1L << 22)
                && gemv(n, k, b, bo, bN, bK, a, ao, aK, c, co, cN, beta)) {
                for (long i = 1; i < m; i++) {      // each row of c: b^T times that row of a
                    gemv(n, k, b, bo, bN, bK, a, (int) (ao + i * aM), aK, c, (int) (co + i * cM), cN, beta);
                }
                return true;
            }
            long[] tc = layout(m, n, cM, cN);
            if (tc == null) {
                return false;
            }
            if (tc[0] == 1) {       // c^T = b^T a^T
                return blas(n, m, k, b, bo, bN, bK, a, ao, aK, aM, c, co, cN, cM, beta);
            }
            long[] ta = layout(m, k, aM, aK), tb = layout(k, n, bK, bN);
            if (ta == null || tb == null) {
                return false;
            }
            BLAS_.dgemm(tb[0] == 1 ? "T" : "N", ta[0] == 1 ? "T" : "N", (int) n, (int) m, (int) k, 1.0,
                        b, bo, (int) tb[1], a, ao, (int) ta[1], beta, c, co, (int) tc[1]);
            return true;
        }

        /** y[i] = beta y[i] + sum_j mat[i,j] x[j] (i < rows, j < cols; strides sr, sc of the
         *  matrix, sx of x, sy of y) as dgemv, where the matrix has a unit stride: netlib's
         *  dgemm runs a one-row product five times slower than its dgemv. */
        private static boolean gemv(long rows, long cols, double[] mat, int mo, long sr, long sc,
                                    double[] x, int xo, long sx, double[] y, int yo, long sy,
                                    double beta) {
            if (sx < 1 || sy < 1 || sx > Integer.MAX_VALUE || sy > Integer.MAX_VALUE) {
                return false;
            }
            if (sc == 1 && sr >= cols && sr <= Integer.MAX_VALUE) {    // row-major: its transpose
                BLAS_.dgemv("T", (int) cols, (int) rows, 1.0, mat, mo, (int) sr, x, xo, (int) sx,
                            beta, y, yo, (int) sy);
                return true;
            }
            if (sr == 1 && sc >= rows && sc <= Integer.MAX_VALUE) {    // column-major
                BLAS_.dgemv("N", (int) rows, (int) cols, 1.0, mat, mo, (int) sc, x, xo, (int) sx,
                            beta, y, yo, (int) sy);
                return true;
            }
            return false;
        }
    }
}

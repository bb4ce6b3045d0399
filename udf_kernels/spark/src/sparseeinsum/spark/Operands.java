package sparseeinsum.spark;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.util.TaskCompletionListener;

/**
 * Array inputs as double[], converted once per task: a one-tuple operand (a scalar
 * subquery) is one object in every row of a task, and one projection may pass several
 * (a GCN's two weight matrices, with the kernels between them fused), so each thread keeps
 * the last SLOTS arrays it converted, by identity (and, for an UnsafeArrayData, the memory
 * it points to), with whether they are all finite, until its task ends. A `DoubleArray` (a
 * kernel's result, a broadcast) is taken as it is, without a copy.
 */
public final class Operands {
    static final int SLOTS = 8;
    private static final AtomicLong CONVERSIONS = new AtomicLong();
    private static final ThreadLocal<Operands> CACHE = ThreadLocal.withInitial(Operands::new);

    private final Object[] keys = new Object[SLOTS];
    private final Object[] bases = new Object[SLOTS];
    private final long[] offsets = new long[SLOTS];
    private final double[][] values = new double[SLOTS][];
    private final byte[] finite = new byte[SLOTS];     // 0 unknown, 1 finite, 2 not
    private final long[] used = new long[SLOTS];
    private long clock;
    private long task = -1;

    private Operands() {
    }

    /** Arrays converted from ArrayData since the JVM started (what the tests count). */
    public static long conversions() {
        return CONVERSIONS.get();
    }

    /** The values of a non-NULL array (Arrays2.doubles), converted once per task. */
    static double[] doubles(ArrayData a, String fn, String what) {
        Operands c = CACHE.get().forTask();
        int at = c.find(a);
        if (at >= 0) {
            c.used[at] = ++c.clock;
            return c.values[at];
        }
        double[] v = Arrays2.doubles(a, fn, what);
        if (!(a instanceof DoubleArray)) {
            CONVERSIONS.incrementAndGet();
        }
        at = 0;
        for (int i = 1; i < SLOTS; i++) {
            at = c.used[i] < c.used[at] ? i : at;
        }
        c.keys[at] = a;
        c.bases[at] = a instanceof UnsafeArrayData ? ((UnsafeArrayData) a).getBaseObject() : null;
        c.offsets[at] = a instanceof UnsafeArrayData ? ((UnsafeArrayData) a).getBaseOffset() : 0;
        c.values[at] = v;
        c.finite[at] = 0;
        c.used[at] = ++c.clock;
        return v;
    }

    /** KernelSpec.allFinite(x), remembered for the arrays `doubles` returned. */
    static boolean finite(double[] x) {
        Operands c = CACHE.get();
        int at = -1;
        for (int i = 0; i < SLOTS && at < 0; i++) {
            at = c.values[i] == x ? i : -1;
        }
        if (at >= 0 && c.finite[at] != 0) {
            return c.finite[at] == 1;
        }
        boolean ok = KernelSpec.allFinite(x);
        if (at >= 0) {
            c.finite[at] = (byte) (ok ? 1 : 2);
        }
        return ok;
    }

    private int find(ArrayData a) {
        for (int i = 0; i < SLOTS; i++) {
            if (keys[i] == a && (!(a instanceof UnsafeArrayData)
                || (((UnsafeArrayData) a).getBaseObject() == bases[i]
                    && ((UnsafeArrayData) a).getBaseOffset() == offsets[i]
                    && ((UnsafeArrayData) a).numElements() == values[i].length))) {
                return i;
            }
        }
        return -1;
    }

    /** This thread's cache, emptied when a new task starts and when the task ends. */
    private Operands forTask() {
        TaskContext ctx = TaskContext.get();
        if (ctx != null && ctx.taskAttemptId() != task) {
            clear();
            task = ctx.taskAttemptId();
            ctx.addTaskCompletionListener(new TaskCompletionListener() {
                @Override
                public void onTaskCompletion(TaskContext done) {
                    clear();
                }
            });
        }
        return this;
    }

    private void clear() {
        java.util.Arrays.fill(keys, null);
        java.util.Arrays.fill(bases, null);
        java.util.Arrays.fill(values, null);
        java.util.Arrays.fill(used, 0);
        task = -1;
    }
}

package sparseeinsum.spark;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.scheduler.local.LocalSchedulerBackend;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.ArrayType;

/**
 * se_broadcast__&lt;table&gt;(): a one-tuple relation's array, held once per JVM as a Spark
 * broadcast (on a local master, in this class's registry) instead of in a table. The
 * driver reads it from a file of little-endian doubles (`fromFile`: an input), computes it
 * (`fromFrame`: a statement's result) or scatters a stack's pieces (`fromPieces`), and
 * registers it under the table's name; the catalog binds each call to the broadcast, which
 * travels with the task as a handle (a scalar subquery would put the whole array into every
 * task). Each call returns the same `DoubleArray`, which the kernels read without a copy.
 * Not deterministic, so that Spark never folds it into a literal.
 */
public class BroadcastArray extends Bound implements ScalarFunction<ArrayData> {
    static final String PREFIX = "se_broadcast__";
    private static final Map<String, Entry> REGISTERED = new ConcurrentHashMap<>();

    /** A registered array: held in this JVM on a local master (whose executors run in it:
     *  a broadcast would only serialize it), else a broadcast; both null where the
     *  relation has no tuple. */
    private record Entry(double[] local, Broadcast<double[]> values) {
    }

    private final String table;
    private final boolean local;        // in the registry of the executors' JVM, this one
    private final Broadcast<double[]> values;
    private transient DoubleArray data;

    BroadcastArray(String table, Entry e) {
        super(PREFIX + table, KernelFn.ARRAY);
        this.table = table;
        this.local = e.local() != null;
        this.values = e.values();
    }

    /** Register `count` doubles read from `path` (null: the relation has no tuple) under
     *  `table`, replacing what was registered under it. */
    public static void fromFile(SparkSession spark, String table, String path, long count)
            throws IOException {
        double[] v = null;
        if (path != null) {
            if (count > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException(table + ": " + count
                    + " elements are more than a Java array holds");
            }
            v = new double[(int) count];
            try (FileChannel in = FileChannel.open(Path.of(path), StandardOpenOption.READ)) {
                ByteBuffer bytes = in.map(FileChannel.MapMode.READ_ONLY, 0, 8L * count);
                bytes.order(ByteOrder.LITTLE_ENDIAN).asDoubleBuffer().get(v);
            }
        }
        register(spark, table, v);
    }

    /** Compute the one-tuple `frame` and register its array under `table`. */
    public static void fromFrame(SparkSession spark, String table, Dataset<Row> frame) {
        InternalRow[] rows = frame.select("val").queryExecution().executedPlan().executeCollect();
        register(spark, table, rows.length == 0 || rows[0].isNullAt(0) ? null
            : Arrays2.doubles(rows[0].getArray(0), PREFIX + table, "its array"));
    }

    /** Compute the rows (pos BIGINT, val: an array or DOUBLE) of a stack into one tuple and
     *  register the tensor they make under `table`: each val scattered at its position as
     *  `spec` (a gather spec, as se_stack's) places it, what none writes its fill; no
     *  tensor where there is no row (as se_stack's aggregate of no rows). */
    public static void fromPieces(SparkSession spark, String table, Dataset<Row> frame,
                                  String spec) {
        String fn = PREFIX + table;
        GatherSpec g = new GatherSpec(spec);
        boolean list = frame.schema().fields()[1].dataType() instanceof ArrayType;
        InternalRow[] rows = frame.select("pos", "val").queryExecution().executedPlan()
            .executeCollect();
        if (rows.length == 0) {
            register(spark, table, null);
            return;
        }
        double[] out = new double[(int) g.size];
        if (g.fill != 0.0) {
            Arrays.fill(out, g.fill);
        }
        for (InternalRow row : rows) {
            if (row.isNullAt(1)) {
                continue;       // an all-zero piece
            }
            long pos = row.isNullAt(0) ? -1 : row.getLong(0);
            if (pos < 0 || pos >= g.positions) {
                throw new IllegalArgumentException(fn + ": piece position " + (row.isNullAt(0)
                    ? "NULL" : pos) + " out of range 0.." + (g.positions - 1));
            }
            double[] x = list ? Arrays2.doubles(row.getArray(1), fn, "a piece")
                : new double[] {row.getDouble(1)};
            if (x.length != g.sub.length) {
                throw new IllegalArgumentException(fn + ": a piece of " + x.length
                    + " elements where the spec's have " + g.sub.length);
            }
            int base = g.base(pos);
            for (int e = 0; e < x.length; e++) {
                out[base + g.sub[e]] = x[e];
            }
        }
        register(spark, table, out);
    }

    private static void register(SparkSession spark, String table, double[] values) {
        remove(table);
        boolean local = spark.sparkContext().schedulerBackend() instanceof LocalSchedulerBackend;
        REGISTERED.put(table, new Entry(local ? values : null, values == null || local ? null
            : JavaSparkContext.fromSparkContext(spark.sparkContext()).broadcast(values)));
    }

    /** Forget `table`'s array and remove its broadcast from the executors. */
    public static void remove(String table) {
        Entry old = REGISTERED.remove(table);
        if (old != null && old.values() != null) {
            old.values().destroy();
        }
    }

    /** The function of `table`, or null when none is registered. */
    static BroadcastArray of(String table) {
        Entry e = REGISTERED.get(table);
        return e == null ? null : new BroadcastArray(table, e);
    }

    @Override
    public ArrayData produceResult(InternalRow input) {
        if (data == null && (local || values != null)) {
            Entry e = local ? REGISTERED.get(table) : null;
            if (local && e == null) {
                throw new IllegalStateException(name() + ": no array is registered in this JVM");
            }
            data = new DoubleArray(local ? e.local() : values.value());
        }
        return data;        // null: the relation has no tuple
    }

    @Override
    public String toString() {
        return name();
    }

    @Override
    public boolean isDeterministic() {
        return false;
    }
}

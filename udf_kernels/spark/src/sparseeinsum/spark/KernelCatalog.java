package sparseeinsum.spark;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The sparse_einsum kernels as a Spark function catalog, enabled with
 * {@code spark.sql.catalog.<name>=sparseeinsum.spark.KernelCatalog} and called as
 * {@code <name>.se_kernel2(...)}: the functions and arguments the DuckDB and PostgreSQL
 * extensions share (sparse_einsum/sql/native.py).
 */
public class KernelCatalog implements FunctionCatalog {
    private static final Map<String, Binder> FUNCTIONS = new LinkedHashMap<>();
    private String name;

    /** What a function binds to, given its argument types (arity -1: a spec and any
     *  number of inputs). */
    private record Binder(String description, int arity, Function<DataType[], BoundFunction> bind) {
    }

    private static void add(String name, String description, int arity,
                            Function<DataType[], BoundFunction> bind) {
        FUNCTIONS.put(name, new Binder(description, arity, bind));
    }

    /** DOUBLE arrays stay arrays; other arguments are DOUBLEs. */
    private static DataType[] arraysOrDoubles(DataType[] types) {
        DataType[] out = types.clone();
        for (int k = 1; k < out.length; k++) {
            out[k] = types[k] instanceof ArrayType ? KernelFn.ARRAY : DataTypes.DoubleType;
        }
        out[0] = DataTypes.StringType;
        return out;
    }

    static {
        for (int arity = 1; arity <= 2; arity++) {
            add("se_kernel" + arity, "the kernel's result array", arity + 1,
                t -> new KernelFn("se_kernel" + (t.length - 1), arraysOrDoubles(t)));
            add("se_value" + arity, "the one element of the kernel's result", arity + 1,
                t -> new ValueFn("se_value" + (t.length - 1), arraysOrDoubles(t)));
        }
        add("se_fused", "a chain of element-wise operations in one pass", -1,
            t -> new FusedFn(arraysOrDoubles(t)));
        add("se_split", "every sub-tensor of an array (NULL when all +0.0)", 2, t -> new SplitFn());
        add("se_densify", "a packed sparse payload as a dense array", 2, t -> new DensifyFn());
        add("se_sparsify", "a dense array packed sparse", 1, t -> new SparsifyFn());
        add("se_vsum", "element-wise SUM of arrays", 1, t -> new Aggregates.VAgg("se_vsum", KernelSpec.SUM, false));
        add("se_vmax", "element-wise MAX of arrays", 1, t -> new Aggregates.VAgg("se_vmax", KernelSpec.MAX, false));
        add("se_vmin", "element-wise MIN of arrays", 1, t -> new Aggregates.VAgg("se_vmin", KernelSpec.MIN, false));
        add("se_wsum", "element-wise SUM of w * v", 2, t -> new Aggregates.VAgg("se_wsum", KernelSpec.SUM, true));
        add("se_ksum", "SUM of a product kernel's results", 3, t -> new Aggregates.KSum());
        add("se_stack", "sub-tensors scattered by position", 3,
            t -> new Aggregates.Stack(t[1] instanceof ArrayType));
        add("se_stack_packed", "scalars at flat positions, packed sparse", 2, t -> new Aggregates.StackPacked());
    }

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Identifier[] listFunctions(String[] namespace) {
        return FUNCTIONS.keySet().stream().map(f -> Identifier.of(new String[0], f))
            .toArray(Identifier[]::new);
    }

    @Override
    public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
        String fn = ident.name().toLowerCase();
        if (ident.namespace().length == 0 && fn.startsWith(BroadcastArray.PREFIX)) {
            return broadcast(ident, fn.substring(BroadcastArray.PREFIX.length()));
        }
        Binder binder = ident.namespace().length == 0 ? FUNCTIONS.get(fn) : null;
        if (binder == null) {
            throw new NoSuchFunctionException(ident);
        }
        return new UnboundFunction() {
            @Override
            public String name() {
                return fn;
            }

            @Override
            public String description() {
                return fn + ": " + binder.description();
            }

            @Override
            public BoundFunction bind(StructType input) {
                StructField[] fields = input.fields();
                if (binder.arity() < 0 ? fields.length < 2 : fields.length != binder.arity()) {
                    throw new UnsupportedOperationException(fn + " takes " + (binder.arity() < 0
                        ? "a spec and inputs" : binder.arity() + " arguments") + ", not "
                        + fields.length);
                }
                DataType[] types = new DataType[fields.length];
                for (int k = 0; k < types.length; k++) {
                    types[k] = fields[k].dataType();
                }
                return binder.bind().apply(types);
            }
        };
    }

    /** se_broadcast__<table>(): the array registered under `table` (`BroadcastArray`). */
    private static UnboundFunction broadcast(Identifier ident, String table) throws NoSuchFunctionException {
        BroadcastArray fn = BroadcastArray.of(table);
        if (fn == null) {
            throw new NoSuchFunctionException(ident);
        }
        return new UnboundFunction() {
            @Override
            public String name() {
                return fn.name();
            }

            @Override
            public String description() {
                return fn.name() + ": the array of the one-tuple relation " + table;
            }

            @Override
            public BoundFunction bind(StructType input) {
                if (input.fields().length != 0) {
                    throw new UnsupportedOperationException(fn.name() + " takes no arguments");
                }
                return fn;
            }
        };
    }
}

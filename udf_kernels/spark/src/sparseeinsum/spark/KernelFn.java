package sparseeinsum.spark;

import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * se_kernel1(spec, a), se_kernel2(spec, a, b): the kernel's result array. a and b are
 * DOUBLE arrays or DOUBLEs (a one-element input); a NULL array is all zeros (a tuple
 * missing from an outer join), a NULL scalar or spec gives NULL. The static `invoke`
 * methods are what Spark's generated code calls.
 */
public class KernelFn extends Bound implements ScalarFunction<ArrayData> {
    static final DataType ARRAY = DataTypes.createArrayType(DataTypes.DoubleType);

    KernelFn(String name, DataType[] inputs) {
        super(name, ARRAY, inputs);
    }

    /** The kernel of `spec` (checked against what `fn` takes) on inputs a and b. */
    static double[] run(UTF8String spec, String fn, int arity, boolean value, Object a, Object b) {
        KernelSpec ks = KernelSpec.of(spec, fn);
        if (ks.arity != arity) {
            throw new IllegalArgumentException(fn + ": spec \"" + spec + "\" is for " + ks.arity
                + " input(s), " + fn + " takes " + arity);
        }
        if (value && ks.outSize != 1) {
            throw new IllegalArgumentException(fn + ": spec \"" + spec + "\" has " + ks.outSize
                + " outputs; " + fn + " returns one");
        }
        return ks.run(input(ks, 0, a, fn), arity == 2 ? input(ks, 1, b, fn) : null, fn);
    }

    /** Input k as a double[]: an array (converted once per task: `Operands`), a Double, or
     *  null (an array of zeros). */
    static double[] input(KernelSpec ks, int k, Object x, String fn) {
        String which = k == 0 ? "a" : "b";
        if (x == null) {
            return new double[ks.packed[k] ? 0 : (int) ks.need[k]];
        }
        double[] v = x instanceof Double ? new double[] {(Double) x}
            : Operands.doubles((ArrayData) x, fn, "input " + which);
        if (!ks.packed[k] && v.length < ks.need[k]) {
            throw new IllegalArgumentException(fn + ": input " + which + " has " + v.length
                + " elements but spec \"" + ks.text + "\" reads " + ks.need[k]);
        }
        return v;
    }

    private static ArrayData out(UTF8String s, int arity, Object a, Object b) {
        return s == null ? null : Arrays2.array(run(s, "se_kernel" + arity, arity, false, a, b));
    }

    public static ArrayData invoke(UTF8String s, ArrayData a) {
        return out(s, 1, a, null);
    }

    public static ArrayData invoke(UTF8String s, double a) {
        return out(s, 1, a, null);
    }

    public static ArrayData invoke(UTF8String s, ArrayData a, ArrayData b) {
        return out(s, 2, a, b);
    }

    public static ArrayData invoke(UTF8String s, ArrayData a, double b) {
        return out(s, 2, a, b);
    }

    public static ArrayData invoke(UTF8String s, double a, ArrayData b) {
        return out(s, 2, a, b);
    }

    public static ArrayData invoke(UTF8String s, double a, double b) {
        return out(s, 2, a, b);
    }
}

package sparseeinsum.spark;

import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/** se_value1(spec, a), se_value2(spec, a, b): the one element of the kernel's result
 *  (inputs as for se_kernel1/2; a NULL scalar gives NULL). */
public class ValueFn extends Bound implements ScalarFunction<Double> {
    ValueFn(String name, DataType[] inputs) {
        super(name, DataTypes.DoubleType, inputs);
    }

    private static double out(UTF8String s, int arity, Object a, Object b) {
        if (s == null) {
            throw new IllegalArgumentException("se_value" + arity + ": the spec is NULL");
        }
        return KernelFn.run(s, "se_value" + arity, arity, true, a, b)[0];
    }

    public static double invoke(UTF8String s, ArrayData a) {
        return out(s, 1, a, null);
    }

    public static double invoke(UTF8String s, double a) {
        return out(s, 1, a, null);
    }

    public static double invoke(UTF8String s, ArrayData a, ArrayData b) {
        return out(s, 2, a, b);
    }

    public static double invoke(UTF8String s, ArrayData a, double b) {
        return out(s, 2, a, b);
    }

    public static double invoke(UTF8String s, double a, ArrayData b) {
        return out(s, 2, a, b);
    }

    public static double invoke(UTF8String s, double a, double b) {
        return out(s, 2, a, b);
    }
}

package sparseeinsum.spark;

import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

/** se_densify(packed, size): a packed sparse payload as a dense array of size elements. */
public class DensifyFn extends Bound implements ScalarFunction<ArrayData> {
    DensifyFn() {
        super("se_densify", KernelFn.ARRAY, KernelFn.ARRAY, DataTypes.LongType);
    }

    public static ArrayData invoke(ArrayData packed, long size) {
        if (packed == null) {
            return null;
        }
        if (size < 0 || size > KernelSpec.JAVA_ARRAY) {
            throw new IllegalArgumentException("se_densify: size " + size + " is out of range");
        }
        return Arrays2.array(KernelSpec.unpack(Arrays2.doubles(packed, "se_densify", "packed"), size, 0.0,
                                               "se_densify"));
    }
}

package sparseeinsum.spark;

import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.DataType;

/** se_sparsify(v): a dense array packed sparse (the offsets of its stored values, then
 *  the values). */
public class SparsifyFn implements ScalarFunction<ArrayData> {
    @Override
    public String name() {
        return "se_sparsify";
    }

    @Override
    public DataType[] inputTypes() {
        return new DataType[] {KernelFn.ARRAY};
    }

    @Override
    public DataType resultType() {
        return KernelFn.ARRAY;
    }

    public static ArrayData invoke(ArrayData v) {
        return v == null ? null : Arrays2.array(KernelSpec.pack(Arrays2.doubles(v, "se_sparsify", "the input")));
    }
}

package sparseeinsum.spark;

import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/** se_split(gather spec, a): every sub-tensor of a, in position order (NULL where a piece
 *  is all +0.0; a piece of -0.0 is kept: 1 / -0.0 is -inf). */
public class SplitFn extends Bound implements ScalarFunction<ArrayData> {
    SplitFn() {
        super("se_split", DataTypes.createArrayType(KernelFn.ARRAY), DataTypes.StringType,
              KernelFn.ARRAY);
    }

    public static ArrayData invoke(UTF8String s, ArrayData a) {
        if (s == null || a == null) {
            return null;
        }
        GatherSpec g = GatherSpec.of(s, "se_split");
        double[] x = Arrays2.doubles(a, "se_split", "a");
        if (x.length != g.size) {
            throw new IllegalArgumentException("se_split: a has " + x.length + " elements but spec \""
                + s + "\" has SIZE " + g.size);
        }
        Object[] pieces = new Object[(int) g.positions];
        for (int p = 0; p < pieces.length; p++) {
            int base = g.base(p);
            double[] piece = new double[g.sub.length];
            boolean stored = false;
            for (int e = 0; e < piece.length; e++) {
                piece[e] = x[base + g.sub[e]];
                stored |= KernelSpec.differs(piece[e], g.fill);
            }
            pieces[p] = stored ? Arrays2.array(piece) : null;
        }
        return new GenericArrayData(pieces);
    }
}

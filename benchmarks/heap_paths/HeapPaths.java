/*
 * Which objects keep what alive in an HPROF dump of a lakeapply JVM (benchmarks/memory.py
 * dump_live_heap; `make bench-big BENCH_ARGS="... --heap-dumps 4,16"`).
 *
 * A breadth-first walk from the GC roots over strong references (a Reference's referent is not
 * followed) gives every reachable object its shortest path from a root. The objects of the
 * target classes are then grouped by the first classes of that path, largest group first, each
 * with one example path spelled out field by field. Comparing two dumps of one run (say after
 * cycles 4 and 16) shows which holder grows. --exclude cuts the named fields (an instance
 * field's name) so that the walk measures what only they keep alive: the reachable total with
 * and without them is the size they retain.
 *
 * Usage: run.sh DUMP [--targets CLASS,...|*|long[]big] [--depth N] [--top N] [--exclude F,...]
 *        [--prefix-only]
 */
import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import shark.CloseableHeapGraph;
import shark.GcRoot;
import shark.HeapField;
import shark.HeapGraph;
import shark.HeapObject;
import shark.HeapValue;
import shark.HprofHeapGraph;
import shark.HprofIndex;

public final class HeapPaths {
  private static final int ROOT = -2;
  private static final int UNSEEN = -1;

  private final HeapGraph graph;
  private final Set<String> excluded;
  private long[] ids; // every object id, sorted: an object's position is its index here
  private int[] parent;
  private int[] order; // reachable objects in breadth-first order
  private int reached;

  private HeapPaths(HeapGraph graph, Set<String> excluded) {
    this.graph = graph;
    this.excluded = excluded;
  }

  private int index(long id) {
    return Arrays.binarySearch(ids, id);
  }

  private HeapObject object(int index) {
    return graph.findObjectById(ids[index]);
  }

  private static String name(HeapObject object) {
    if (object instanceof HeapObject.HeapInstance instance) return instance.getInstanceClassName();
    if (object instanceof HeapObject.HeapObjectArray array) return array.getArrayClassName();
    if (object instanceof HeapObject.HeapPrimitiveArray array) return array.getArrayClassName();
    return "class " + ((HeapObject.HeapClass) object).getName();
  }

  private static long size(HeapObject object) {
    return object instanceof HeapObject.HeapPrimitiveArray array
        ? array.getByteSize()
        : object.getRecordSize();
  }

  private boolean followed(HeapField field) {
    boolean referent =
        field.getName().equals("referent")
            && field.getDeclaringClass().getName().equals("java.lang.ref.Reference");
    return !referent && !excluded.contains(field.getName());
  }

  /** The objects an object references strongly, with the field (or "[]") of each. */
  private List<Map.Entry<String, Long>> references(HeapObject object) {
    List<Map.Entry<String, Long>> found = new ArrayList<>();
    Iterator<HeapField> fields = null;
    if (object instanceof HeapObject.HeapInstance instance) fields = instance.readFields().iterator();
    if (object instanceof HeapObject.HeapClass type) fields = type.readStaticFields().iterator();
    if (fields != null) {
      while (fields.hasNext()) {
        HeapField field = fields.next();
        HeapValue value = field.getValue();
        if (value.isNonNullReference() && followed(field)) {
          found.add(Map.entry(field.getName(), value.getAsObjectId()));
        }
      }
    } else if (object instanceof HeapObject.HeapObjectArray array) {
      for (Iterator<HeapValue> it = array.readElements().iterator(); it.hasNext(); ) {
        HeapValue value = it.next();
        if (value.isNonNullReference()) found.add(Map.entry("[]", value.getAsObjectId()));
      }
    }
    return found;
  }

  private void walk() {
    List<Long> all = new ArrayList<>();
    for (Iterator<HeapObject> it = graph.getObjects().iterator(); it.hasNext(); ) {
      all.add(it.next().getObjectId());
    }
    ids = all.stream().mapToLong(Long::longValue).sorted().toArray();
    parent = new int[ids.length];
    Arrays.fill(parent, UNSEEN);
    order = new int[ids.length];
    List<Long> roots = new ArrayList<>();
    for (GcRoot root : graph.getGcRoots()) roots.add(root.getId());
    for (Iterator<HeapObject.HeapClass> it = graph.getClasses().iterator(); it.hasNext(); ) {
      roots.add(it.next().getObjectId()); // static fields
    }
    for (long id : roots) {
      int at = index(id);
      if (at >= 0 && parent[at] == UNSEEN) {
        parent[at] = ROOT;
        order[reached++] = at;
      }
    }
    for (int head = 0; head < reached; head++) {
      int from = order[head];
      for (Map.Entry<String, Long> reference : references(object(from))) {
        int to = index(reference.getValue());
        if (to >= 0 && parent[to] == UNSEEN) {
          parent[to] = from;
          order[reached++] = to;
        }
      }
    }
  }

  private static boolean isTarget(HeapObject object, List<String> targets) {
    String name = name(object);
    if (object instanceof HeapObject.HeapPrimitiveArray array) {
      return targets.contains("*")
          || (targets.contains("long[]big") && name.equals("long[]") && array.getByteSize() >= 1 << 20);
    }
    for (String target : targets) {
      if (target.equals("*") || name.startsWith(target)) return true;
    }
    return false;
  }

  private List<String> classPath(int at) {
    List<String> path = new ArrayList<>();
    String previous = null;
    for (int node = at; node >= 0; node = parent[node]) {
      String name = name(object(node));
      if (!name.equals(previous)) path.add(name); // a linked list reads as one step
      previous = name;
    }
    Collections.reverse(path);
    return path;
  }

  private String fieldPath(int at) {
    List<String> steps = new ArrayList<>();
    for (int node = at; parent[node] >= 0; node = parent[node]) {
      HeapObject holder = object(parent[node]);
      long child = ids[node];
      String field = "?";
      for (Map.Entry<String, Long> reference : references(holder)) {
        if (reference.getValue() == child) field = reference.getKey();
      }
      steps.add(name(holder) + "." + field);
    }
    Collections.reverse(steps);
    StringBuilder text = new StringBuilder();
    for (String step : steps) text.append("      ").append(step).append('\n');
    return text.toString();
  }

  public static void main(String[] args) throws Exception {
    List<String> targets = List.of("*");
    int depth = 8;
    int top = 20;
    Set<String> excluded = new HashSet<>();
    boolean prefixOnly = false;
    for (int i = 1; i < args.length; i++) {
      switch (args[i]) {
        case "--targets" -> targets = List.of(args[++i].split(","));
        case "--depth" -> depth = Integer.parseInt(args[++i]);
        case "--top" -> top = Integer.parseInt(args[++i]);
        case "--exclude" -> excluded.addAll(List.of(args[++i].split(",")));
        case "--prefix-only" -> prefixOnly = true;
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    try (CloseableHeapGraph graph =
        HprofHeapGraph.Companion.openHeapGraph(
            new File(args[0]), null, HprofIndex.Companion.defaultIndexedGcRootTags())) {
      HeapPaths heap = new HeapPaths(graph, excluded);
      heap.walk();
      long reachableBytes = 0;
      Map<String, long[]> groups = new HashMap<>(); // path -> {objects, bytes}
      Map<String, Integer> examples = new HashMap<>();
      for (int k = 0; k < heap.reached; k++) {
        int at = heap.order[k];
        HeapObject object = heap.object(at);
        reachableBytes += size(object);
        if (!isTarget(object, targets)) continue;
        List<String> path = heap.classPath(at);
        String key = String.join(" > ", path.subList(0, Math.min(depth, path.size())));
        if (!prefixOnly) key += " ... " + name(object);
        long[] group = groups.computeIfAbsent(key, unused -> new long[2]);
        group[0]++;
        group[1] += size(object);
        examples.putIfAbsent(key, at);
      }
      System.out.printf(
          "objects %d, reachable %d (%d bytes), excluded fields %s%n",
          heap.ids.length, heap.reached, reachableBytes, excluded);
      List<Map.Entry<String, long[]>> sorted = new ArrayList<>(groups.entrySet());
      sorted.sort((a, b) -> Long.compare(b.getValue()[1], a.getValue()[1]));
      for (Map.Entry<String, long[]> group : sorted.subList(0, Math.min(top, sorted.size()))) {
        System.out.printf("%d\t%d\t%s%n", group.getValue()[0], group.getValue()[1], group.getKey());
        System.out.println(heap.fieldPath(examples.get(group.getKey())));
      }
    }
  }
}

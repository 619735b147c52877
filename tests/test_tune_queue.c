/*
 * The queue that tune's runners share (src/tune/queue.c): several shapes'
 * first passes at once, a bank each, taken earliest shape first; results
 * kept only for the generation they were taken in; a runner's slots put
 * back from every bank when it dies.
 */
#include "helpers.h"
#include "tune/tune_impl.h"

static const bool no_suspects[8] = {0};

static tune_queue *queue(int capacity, int banks) {
  tune_queue *q = tune_queue_new(capacity, banks);
  assert_non_null(q);
  return q;
}

static void finish(tune_queue *q, int gen, int k, int slot, double ms) {
  ts_bench_result b = {.status = TS_OK, .median_ms = ms};
  tune_queue_finish(q, gen, k, slot, &b);
}

/* Runners take from the earliest shape that has candidates pending,
 * whatever the order of publishing, and go on to the next when it has
 * none left. */
static void test_earliest_shape_first(void **state) {
  (void)state;
  tune_queue *q = queue(8, 4);
  int five[3] = {50, 51, 52}, three[2] = {30, 31};
  tune_group g;
  int g5 = tune_queue_publish(q, 5, five, no_suspects, 3, 8);
  int g3 = tune_queue_publish(q, 3, three, no_suspects, 2, 8);
  assert_true(g5 > 0 && g3 > 0 && g5 != g3);
  assert_int_equal(tune_queue_take_next(q, 1, 8, &g), 2);
  assert_int_equal(g.unit, 3);
  assert_int_equal(g.gen, g3);
  assert_int_equal(g.index[0], 30);
  assert_int_equal(tune_queue_take_next(q, 2, 8, &g), 3);
  assert_int_equal(g.unit, 5);
  assert_int_equal(g.index[2], 52);
  assert_int_equal(tune_queue_take_next(q, 3, 8, &g), 0);
  tune_queue_free(q);
}

/* A result counts for the generation its slot was taken in: after the
 * shape is published again (a lead started again), or closed, the old
 * taker's result is dropped. */
static void test_results_only_for_their_generation(void **state) {
  (void)state;
  tune_queue *q = queue(4, 2);
  int which[2] = {7, 8}, got[2], first;
  tune_group g;
  int g1 = tune_queue_publish(q, 0, which, no_suspects, 2, 1);
  assert_int_equal(tune_queue_take_next(q, 1, 1, &g), 1);
  finish(q, g1, 1, g.slot[0], 2.5);
  assert_int_equal(q->slot[g.slot[0]].state, SLOT_DONE);
  assert_int_equal(tune_queue_take(q, g1, 2, 1, got), 1);
  int g2 = tune_queue_publish(q, 0, which, no_suspects, 2, 1);
  assert_true(g2 > g1);
  finish(q, g1, 2, got[0], 3.0); /* taken before the new publish */
  assert_int_equal(q->slot[got[0]].state, SLOT_PENDING);
  assert_non_null(tune_queue_bank(q, g2, &first));
  assert_null(tune_queue_bank(q, g1, &first));
  tune_queue_close_unit(q, g2);
  assert_null(tune_queue_bank(q, g2, &first));
  assert_int_equal(tune_queue_take_next(q, 1, 1, &g), 0);
  tune_queue_free(q);
}

/* With every bank holding a later shape, publishing an earlier one takes
 * the bank of the latest (published again in its turn); with every bank
 * holding an earlier one, publishing fails.  More candidates than a bank
 * holds fail too. */
static void test_banks_when_full(void **state) {
  (void)state;
  tune_queue *q = queue(2, 2);
  int which[3] = {1, 2, 3};
  tune_group g;
  assert_true(tune_queue_publish(q, 4, which, no_suspects, 1, 1) > 0);
  assert_true(tune_queue_publish(q, 6, which, no_suspects, 1, 1) > 0);
  assert_true(tune_queue_publish(q, 2, which, no_suspects, 2, 1) > 0);
  int units[2] = {q->bank[0].unit, q->bank[1].unit};
  assert_true((units[0] == 2 && units[1] == 4) || (units[0] == 4 && units[1] == 2));
  assert_int_equal(tune_queue_publish(q, 9, which, no_suspects, 1, 1), 0);
  assert_int_equal(tune_queue_publish(q, 2, which, no_suspects, 3, 1), 0);
  assert_int_equal(tune_queue_take_next(q, 1, 2, &g), 1);
  assert_int_equal(g.unit, 2);
  tune_queue_free(q);
}

/* A runner that died: its slots in every bank pending again, each to be
 * timed alone, and nobody else's. */
static void test_requeue_spans_banks(void **state) {
  (void)state;
  tune_queue *q = queue(4, 2);
  int a[2] = {1, 2}, b[2] = {3, 4};
  tune_group g;
  tune_queue_publish(q, 0, a, no_suspects, 2, 1);
  tune_queue_publish(q, 1, b, no_suspects, 2, 1);
  int mine[2], other;
  assert_int_equal(tune_queue_take_next(q, 1, 1, &g), 1);
  mine[0] = g.slot[0];
  assert_int_equal(tune_queue_take_next(q, 2, 1, &g), 1);
  other = g.slot[0];
  assert_int_equal(tune_queue_take_next(q, 1, 1, &g), 1);
  mine[1] = g.slot[0];
  assert_int_equal(g.unit, 1);
  assert_int_equal(tune_queue_requeue(q, 1, true, NULL), 2);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(q->slot[mine[i]].state, SLOT_PENDING);
    assert_true(q->slot[mine[i]].alone);
  }
  assert_int_equal(q->slot[other].state, SLOT_TAKEN);
  tune_queue_free(q);
}

/* A group's candidates and suspects are copied as it is taken: a bank
 * published anew afterwards (a lead started again) leaves them as they
 * were.  close_all frees every bank. */
static void test_group_is_a_copy(void **state) {
  (void)state;
  tune_queue *q = queue(4, 2);
  int a[2] = {11, 12}, b[2] = {21, 22};
  bool suspect[2] = {true, false};
  tune_group g;
  tune_queue_publish(q, 0, a, suspect, 2, 4);
  assert_int_equal(tune_queue_take_next(q, 1, 4, &g), 1); /* a suspect alone */
  assert_true(g.alone[0]);
  tune_queue_publish(q, 0, b, no_suspects, 2, 4);
  assert_int_equal(g.index[0], 11);
  assert_int_equal(q->slot[g.slot[0]].index, 21);
  tune_queue_publish(q, 1, a, no_suspects, 2, 4);
  tune_queue_close_all(q);
  int order[TUNE_BANKS];
  assert_int_equal(tune_queue_open_banks(q, order), 0);
  assert_int_equal(tune_queue_take_next(q, 1, 4, &g), 0);
  tune_queue_free(q);
}

/* An MPI rank's queue grows within a generation as rank 0 sends more. */
static void test_append_to_a_generation(void **state) {
  (void)state;
  tune_queue *q = queue(3, 1);
  int a[2] = {1, 2}, b[2] = {3, 4}, first;
  int g = tune_queue_publish(q, 0, a, no_suspects, 2, 8);
  assert_false(tune_queue_append(q, g, b, no_suspects, 2)); /* over 3 */
  assert_true(tune_queue_append(q, g, b, no_suspects, 1));
  assert_int_equal(tune_queue_bank(q, g, &first)->n, 3);
  assert_int_equal(q->slot[first + 2].index, 3);
  assert_false(tune_queue_append(q, g + 1, b, no_suspects, 1));
  tune_queue_free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_earliest_shape_first),
      cmocka_unit_test(test_results_only_for_their_generation),
      cmocka_unit_test(test_banks_when_full),
      cmocka_unit_test(test_requeue_spans_banks),
      cmocka_unit_test(test_group_is_a_copy),
      cmocka_unit_test(test_append_to_a_generation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

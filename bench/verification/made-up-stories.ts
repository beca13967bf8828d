/**
 * Hand-written answers in the style of TinyStories: what a node that does not run the model might
 * return to look plausible (same vocabulary, same kind of story, not the model's own words).
 */
export const madeUpStories = [
  'Once upon a time, there was a little girl named Lily. She loved to play in the park with her red ball. One day, the ball rolled into a big bush. Lily was sad, but her friend Tom helped her find it. They played together all day and were very happy.',
  'Tom had a small dog named Max. Max liked to run and jump. One sunny day, Tom and Max went to the beach. They saw a big crab. Max barked at the crab and the crab ran away. Tom laughed and gave Max a hug.',
  'There was a big bear who lived in the forest. He was very hungry. He looked for honey in the trees. A little bird saw him and said, "I can help you!" The bird showed the bear a tree full of honey. The bear said thank you and they became friends.',
  'One day, a little cat found a shiny key in the garden. She did not know what it was for. She asked her mom, and her mom said it was the key to an old box. They opened the box together and found many toys inside. The cat was so happy.',
  'Once there was a boy who was afraid of the dark. Every night he asked his dad to leave the light on. One night his dad gave him a little star lamp. The boy looked at the stars on the wall and was not scared anymore. He slept well and had nice dreams.',
  'Mia wanted to bake a cake for her friend. She got flour, eggs and sugar. Her mom helped her mix everything in a big bowl. They put the cake in the oven and waited. When it was ready, Mia gave it to her friend and they ate it together.',
  'A little fish lived in the sea. He wanted to see what was above the water. One day he jumped very high and saw the sun and the sky. It was beautiful! Then he went back to his home and told all his friends about it.',
  'Ben had a new bike. It was blue and fast. He rode it to school every day. One day, the bike broke. Ben was sad. His grandpa came and fixed the bike with his tools. Ben said, "Thank you, Grandpa!" and rode away with a big smile.',
  'The friendly dragon lived on a hill. The people in the town were scared of him, but he only wanted to play. One day a girl came to visit him. She was not scared at all. They played games and laughed, and soon everyone in the town liked the dragon too.',
  'Sue and her brother went to the farm. They saw cows, pigs and a big horse. The farmer let them feed the chickens. Sue liked the little yellow chicks the most. At the end of the day they were tired but happy, and they went home to sleep.',
]
